#include "tools/PlogScan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>

#include "tools/BoundedFile.h"
#include "tools/Json.h"

namespace npusim::tools {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool isPlogFileName(const std::string& name) {
  const bool logSuffix = name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
  return logSuffix && (name.rfind("plog-", 0) == 0 || name.rfind("device-", 0) == 0);
}

bool startsWithWord(const std::string& text, size_t at, const char* word) {
  const std::string w(word);
  return text.compare(at, w.size(), w) == 0;
}

class Scanner {
 public:
  Scanner(const PlogScanLimits& limits, PlogScanResult& result) : limits_(limits), result_(result) {}

  void walk(const std::string& directory, int depth) {
    if (depth > kMaxPlogDepth) {
      result_.skipped.emplace_back(directory, "deeper than " + std::to_string(kMaxPlogDepth) + " levels: not scanned");
      return;
    }
    DIR* handle = ::opendir(directory.c_str());
    if (handle == nullptr) {
      result_.skipped.emplace_back(directory, describeErrno(errno));
      return;
    }
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(handle);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string path = directory + "/" + name;
      struct stat status {};
      if (::lstat(path.c_str(), &status) != 0) continue;
      if (S_ISLNK(status.st_mode)) {
        if (isPlogFileName(name) || depth < kMaxPlogDepth) {
          result_.skipped.emplace_back(path, "symbolic link: not followed");
        }
        continue;
      }
      if (S_ISDIR(status.st_mode)) {
        walk(path, depth + 1);
      } else if (S_ISREG(status.st_mode) && isPlogFileName(name)) {
        if (result_.files.size() >= limits_.maxFiles) {
          result_.skipped.emplace_back(path, "file limit reached (" + std::to_string(limits_.maxFiles) + ")");
          continue;
        }
        scanFile(path);
      }
    }
  }

  void finish() {
    std::vector<PlogGroup> groups;
    for (auto& [key, group] : groups_) groups.push_back(std::move(group));
    std::stable_sort(groups.begin(), groups.end(), [](const PlogGroup& a, const PlogGroup& b) {
      return a.first.line.timestamp < b.first.line.timestamp;
    });
    result_.groups = std::move(groups);
    std::stable_sort(result_.firstErrorPerProcess.begin(), result_.firstErrorPerProcess.end(),
                     [](const PlogOccurrence& a, const PlogOccurrence& b) { return a.line.timestamp < b.line.timestamp; });
  }

 private:
  void scanFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) {
      result_.skipped.emplace_back(path, describeErrno(errno));
      return;
    }
    result_.files.push_back(path);
    uint64_t budget = std::min(limits_.maxBytesPerFile, limits_.maxTotalBytes - std::min(totalBytes_, limits_.maxTotalBytes));
    std::string buffer(1 << 20, '\0');
    std::string pending;
    uint64_t lineNumber = 0;
    std::set<int64_t> pidsWithError;
    bool discarding = false;  // inside an over-long line
    bool truncated = false;
    const auto handleLine = [&](std::string& text) {
      ++lineNumber;
      processLine(path, lineNumber, text, pidsWithError);
    };
    while (true) {
      if (budget == 0) {
        char probe;
        if (::read(fd, &probe, 1) > 0) truncated = true;
        break;
      }
      const ssize_t n = ::read(fd, buffer.data(), std::min<uint64_t>(buffer.size(), budget));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        result_.skipped.emplace_back(path, "read failed: " + describeErrno(errno));
        break;
      }
      if (n == 0) break;
      budget -= static_cast<uint64_t>(n);
      totalBytes_ += static_cast<uint64_t>(n);
      size_t start = 0;
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        if (buffer[i] != '\n') continue;
        if (!discarding) {
          pending.append(buffer.data() + start, i - start);
          handleLine(pending);
        } else {
          ++lineNumber;
          ++result_.unparsedLines;
        }
        pending.clear();
        discarding = false;
        start = i + 1;
      }
      if (!discarding) {
        pending.append(buffer.data() + start, static_cast<size_t>(n) - start);
        if (pending.size() > limits_.maxLineBytes) {
          // Keep the head of an over-long line; drop the rest up to its newline.
          pending.resize(limits_.maxLineBytes);
          handleLine(pending);
          pending.clear();
          discarding = true;
        }
      }
    }
    if (!pending.empty() && !discarding) handleLine(pending);
    ::close(fd);
    if (truncated) result_.truncatedFiles.push_back(path);
  }

  void processLine(const std::string& path, uint64_t lineNumber, std::string& text, std::set<int64_t>& pidsWithError) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty()) return;
    ++result_.lines;
    if (!isValidUtf8(text)) ++result_.nonUtf8Lines;
    PlogLine line;
    if (!parsePlogLine(text, line)) {
      ++result_.unparsedLines;
      return;
    }
    ++result_.levelCounts[line.level];
    if (line.level != "ERROR") return;
    const std::vector<std::string> codes = errorCodesIn(line.content);
    const std::string code = codes.empty() ? "" : codes.front();
    PlogGroup& group = groups_[line.module + '\x1f' + code];
    PlogOccurrence occurrence{path, lineNumber, line};
    if (line.content.size() > 1000) occurrence.line.content.resize(1000);
    if (group.count == 0 || line.timestamp < group.first.line.timestamp) {
      group.module = line.module;
      group.code = code;
      group.first = occurrence;
    }
    if (line.timestamp > group.lastTimestamp) group.lastTimestamp = line.timestamp;
    ++group.count;
    if (pidsWithError.insert(line.pid).second) result_.firstErrorPerProcess.push_back(occurrence);
  }

  const PlogScanLimits& limits_;
  PlogScanResult& result_;
  std::map<std::string, PlogGroup> groups_;
  uint64_t totalBytes_ = 0;
};

}  // namespace

bool parsePlogLine(const std::string& text, PlogLine& line) {
  // [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [File:Line]TID content
  if (text.empty() || text[0] != '[') return false;
  const size_t levelEnd = text.find(']');
  if (levelEnd == std::string::npos || levelEnd > 12) return false;
  line.level = text.substr(1, levelEnd - 1);
  size_t at = levelEnd + 1;
  if (at >= text.size() || text[at] != ' ') return false;
  ++at;
  const size_t open = text.find('(', at);
  if (open == std::string::npos || open == at) return false;
  line.module = text.substr(at, open - at);
  if (line.module.find(' ') != std::string::npos) return false;
  at = open + 1;
  size_t pidEnd = at;
  while (pidEnd < text.size() && isDigit(text[pidEnd])) ++pidEnd;
  if (pidEnd == at || pidEnd >= text.size() || text[pidEnd] != ',' || pidEnd - at > 10) return false;
  line.pid = std::stoll(text.substr(at, pidEnd - at));
  const size_t close = text.find("):", pidEnd);
  if (close == std::string::npos) return false;
  line.processName = text.substr(pidEnd + 1, close - pidEnd - 1);
  at = close + 2;
  const size_t stampEnd = text.find(' ', at);
  if (stampEnd == std::string::npos) return false;
  line.timestamp = text.substr(at, stampEnd - at);
  if (line.timestamp.size() < 19 || !isDigit(line.timestamp[0])) return false;
  at = stampEnd + 1;
  if (at < text.size() && text[at] == '[') {
    const size_t sourceEnd = text.find(']', at);
    if (sourceEnd == std::string::npos) return false;
    line.source = text.substr(at + 1, sourceEnd - at - 1);
    at = sourceEnd + 1;
    while (at < text.size() && text[at] == ' ') ++at;
    while (at < text.size() && isDigit(text[at])) ++at;  // the thread id
    if (at < text.size() && text[at] == ' ') ++at;
  }
  line.content = text.substr(at);
  return true;
}

std::vector<std::string> errorCodesIn(const std::string& content) {
  std::vector<std::string> cann, acl, pta;
  const auto boundary = [&](size_t i) { return i >= content.size() || !std::isalnum(static_cast<unsigned char>(content[i])); };
  for (size_t i = 0; i + 6 <= content.size(); ++i) {
    if (i > 0 && std::isalnum(static_cast<unsigned char>(content[i - 1]))) continue;
    // CANN: E, a capital letter or digit, four digits (EZ9999, EE1001, EI0006, E19999).
    if (content[i] == 'E' && std::isupper(static_cast<unsigned char>(content[i + 1])) && isDigit(content[i + 2]) &&
        isDigit(content[i + 3]) && isDigit(content[i + 4]) && isDigit(content[i + 5]) && boundary(i + 6)) {
      cann.push_back(content.substr(i, 6));
    }
    // torch_npu: ERR followed by five digits.
    if (i + 8 <= content.size() && startsWithWord(content, i, "ERR") && isDigit(content[i + 3]) &&
        isDigit(content[i + 4]) && isDigit(content[i + 5]) && isDigit(content[i + 6]) && isDigit(content[i + 7]) &&
        boundary(i + 8)) {
      pta.push_back(content.substr(i, 8));
    }
  }
  static const char* kAclMarkers[] = {"error code is ", "error code ", "err=", "result = ", "result=", "ret=", "ret is ",
                                      "errorCode="};
  for (const char* marker : kAclMarkers) {
    size_t at = 0;
    const std::string m(marker);
    while ((at = content.find(m, at)) != std::string::npos) {
      size_t end = at + m.size();
      size_t digits = end;
      while (digits < content.size() && isDigit(content[digits])) ++digits;
      if (digits - end >= 5 && digits - end <= 7) {
        std::string code = content.substr(end, digits - end);
        if (std::find(acl.begin(), acl.end(), code) == acl.end()) acl.push_back(code);
      }
      at = digits;
    }
  }
  std::vector<std::string> all;
  for (auto* list : {&cann, &acl, &pta}) {
    for (auto& code : *list) {
      if (std::find(all.begin(), all.end(), code) == all.end()) all.push_back(code);
    }
  }
  return all;
}

PlogScanResult scanPlogRoots(const std::vector<std::string>& roots, const PlogScanLimits& limits) {
  PlogScanResult result;
  result.roots = roots;
  Scanner scanner(limits, result);
  for (const auto& root : roots) {
    struct stat status {};
    if (::stat(root.c_str(), &status) != 0) {
      const int error = errno;
      if (error == ENOENT) {
        result.missingRoots.push_back(root);
      } else {
        result.skipped.emplace_back(root, describeErrno(error));
      }
      continue;
    }
    if (!S_ISDIR(status.st_mode)) {
      result.skipped.emplace_back(root, "not a directory");
      continue;
    }
    // The root itself may be a link (a shared log volume); what is inside is not followed.
    scanner.walk(root, 0);
  }
  scanner.finish();
  return result;
}

}  // namespace npusim::tools

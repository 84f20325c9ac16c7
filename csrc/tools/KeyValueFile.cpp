#include "tools/KeyValueFile.h"

#include "tools/BoundedFile.h"
#include "tools/Json.h"

namespace npusim::tools {

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::string KeyValueFile::value(const std::string& key) const {
  for (const auto& [name, text] : entries) {
    if (name == key) return text;
  }
  return "";
}

bool KeyValueFile::has(const std::string& key) const {
  for (const auto& entry : entries) {
    if (entry.first == key) return true;
  }
  return false;
}

KeyValueFile parseKeyValueText(const std::string& text, const std::string& path) {
  KeyValueFile file;
  file.path = path;
  file.readable = true;
  if (text.find('\0') != std::string::npos) file.problems.push_back("contains NUL bytes: not a text file");
  size_t start = 0;
  int lineNumber = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(text.substr(start, end - start));
    start = end + 1;
    ++lineNumber;
    if (line.empty() || line[0] == '#') continue;
    if (!isValidUtf8(line)) file.problems.push_back("line " + std::to_string(lineNumber) + ": bytes that are not UTF-8");
    const auto equals = line.find('=');
    if (equals == std::string::npos) {
      file.problems.push_back("line " + std::to_string(lineNumber) + ": not key=value");
      continue;
    }
    std::string key = trim(line.substr(0, equals));
    std::string value = trim(line.substr(equals + 1));
    if (key.empty()) {
      file.problems.push_back("line " + std::to_string(lineNumber) + ": empty key");
      continue;
    }
    if (file.has(key)) file.problems.push_back("line " + std::to_string(lineNumber) + ": " + key + " repeated (the first is used)");
    file.entries.emplace_back(std::move(key), std::move(value));
  }
  return file;
}

KeyValueFile readKeyValueFile(const std::string& path) {
  const BoundedRead read = readBounded(path, kMaxVersionFileBytes);
  if (!read.ok) {
    KeyValueFile file;
    file.path = path;
    file.error = read.error;
    return file;
  }
  KeyValueFile file = parseKeyValueText(read.content, path);
  if (read.truncated) {
    file.problems.push_back("larger than " + std::to_string(kMaxVersionFileBytes / 1024) + " KiB (" +
                            std::to_string(read.fileSize) + " bytes): not a version file; only the start was read");
  }
  return file;
}

}  // namespace npusim::tools

// Triage of plog trees (torch_npu contract §7): finds the plog files under the
// log roots the runtime writes to, parses the CANN line format
//   [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [File:Line]TID content
// and groups ERROR lines by module and error code (CANN codes such as EZ9999,
// ACL return codes such as 507018, torch_npu ERRmmccc suffixes), keeping the
// first occurrence of each group and the first error of each process: the
// first failing call is usually the cause, the rest its echo.
//
// Reads only. Walks at most kMaxDepth levels, does not follow symbolic links
// (they are listed as skipped), reads at most a byte budget per file and in
// total, and caps line length, so a huge or binary log never hangs the scan.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npusim::tools {

struct PlogLine {
  std::string level;
  std::string module;
  int64_t pid = -1;
  std::string processName;
  std::string timestamp;  // YYYY-MM-DD-hh:mm:ss.mmm.uuu, sorts as text
  std::string source;     // File:Line
  std::string content;
};

// Parses one line; false when it is not in the plog format.
bool parsePlogLine(const std::string& text, PlogLine& line);

// The error codes named in `content`, most specific first: CANN codes
// (E[A-Z]dddd), ACL return codes (after "error code is", "err=", "result = ",
// "ret="), torch_npu ERRmmccc.
std::vector<std::string> errorCodesIn(const std::string& content);

struct PlogOccurrence {
  std::string file;
  uint64_t lineNumber = 0;
  PlogLine line;
};

struct PlogGroup {
  std::string module;
  std::string code;  // "" when the line names none
  uint64_t count = 0;
  PlogOccurrence first;
  std::string lastTimestamp;
};

struct PlogScanLimits {
  uint64_t maxBytesPerFile = 128ull << 20;
  uint64_t maxTotalBytes = 512ull << 20;
  uint64_t maxFiles = 10000;
  size_t maxLineBytes = 64 * 1024;
};

struct PlogScanResult {
  std::vector<std::string> roots;          // as given
  std::vector<std::string> missingRoots;
  std::vector<std::string> files;          // scanned
  std::vector<std::pair<std::string, std::string>> skipped;  // path, reason
  std::vector<std::string> truncatedFiles;  // read only up to the byte budget
  uint64_t lines = 0;
  uint64_t unparsedLines = 0;
  uint64_t nonUtf8Lines = 0;
  std::map<std::string, uint64_t> levelCounts;
  std::vector<PlogGroup> groups;            // ERROR lines, ordered by first timestamp
  std::vector<PlogOccurrence> firstErrorPerProcess;  // ordered by timestamp
};

inline constexpr int kMaxPlogDepth = 4;

PlogScanResult scanPlogRoots(const std::vector<std::string>& roots, const PlogScanLimits& limits = {});

}  // namespace npusim::tools

// The key=value files of an Ascend installation: the driver's version.info
// ("Version=24.1.rc3"), the toolkit's ascend_toolkit_install.info
// ("version=8.0.RC2", "path=..."), version.cfg and the per-package
// version.info files. Parsed leniently (spaces around '=', comments, CRLF) but
// every oddity is recorded, because a damaged version file is itself a
// finding of the doctor.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npusim::tools {

struct KeyValueFile {
  std::string path;
  bool readable = false;
  std::string error;                                   // when !readable
  std::vector<std::pair<std::string, std::string>> entries;  // in file order
  std::vector<std::string> problems;                  // "line 3: no '='", "line 5: bytes that are not UTF-8", ...

  // The value of the first entry named `key` (case-sensitive), or "".
  std::string value(const std::string& key) const;
  bool has(const std::string& key) const;
};

// Version files are a few hundred bytes; anything above this is not one.
inline constexpr uint64_t kMaxVersionFileBytes = 64 * 1024;

KeyValueFile parseKeyValueText(const std::string& text, const std::string& path);
KeyValueFile readKeyValueFile(const std::string& path);

}  // namespace npusim::tools

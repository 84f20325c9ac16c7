// Reading files of an installation that may be broken or hostile: version
// files, plog files, shared libraries. Every read is bounded in size, never
// blocks on a FIFO or device, and turns every failure (missing, unreadable,
// symbolic-link loop, directory, ...) into a one-line description instead of
// an exception, because the doctor reports problems rather than stopping at
// the first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace npusim::tools {

struct BoundedRead {
  bool ok = false;          // the file was opened and read (possibly truncated)
  std::string content;      // at most the byte limit
  uint64_t fileSize = 0;    // the size reported by fstat
  bool truncated = false;   // fileSize exceeded the limit: only the start was read
  std::string error;        // when !ok: "No such file or directory", "symbolic link loop", ...
};

// Reads at most `maxBytes` bytes of the regular file `path`, following
// symbolic links (a loop is reported as such). Non-regular files (FIFOs,
// devices, directories) are refused without being read.
BoundedRead readBounded(const std::string& path, uint64_t maxBytes);

// The text of errno `error` with the names users search for: ELOOP is
// "symbolic link loop (too many levels of symbolic links)".
std::string describeErrno(int error);

// The final target of `path` (realpath) or nullopt with `error` set.
std::optional<std::string> resolvePath(const std::string& path, std::string* error = nullptr);

}  // namespace npusim::tools

#include "tools/BoundedFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace npusim::tools {

std::string describeErrno(int error) {
  if (error == ELOOP) return "symbolic link loop (too many levels of symbolic links)";
  return std::strerror(error);
}

BoundedRead readBounded(const std::string& path, uint64_t maxBytes) {
  BoundedRead result;
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    result.error = describeErrno(errno);
    return result;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    result.error = describeErrno(errno);
    ::close(fd);
    return result;
  }
  if (!S_ISREG(info.st_mode)) {
    result.error = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return result;
  }
  result.fileSize = static_cast<uint64_t>(info.st_size);
  const uint64_t wanted = result.fileSize < maxBytes ? result.fileSize : maxBytes;
  result.truncated = result.fileSize > maxBytes;
  result.content.resize(wanted);
  uint64_t done = 0;
  while (done < wanted) {
    const ssize_t n = ::read(fd, result.content.data() + done, wanted - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      result.error = describeErrno(errno);
      ::close(fd);
      return result;
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<uint64_t>(n);
  }
  result.content.resize(done);
  result.ok = true;
  ::close(fd);
  return result;
}

std::optional<std::string> resolvePath(const std::string& path, std::string* error) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) {
    if (error != nullptr) *error = describeErrno(errno);
    return std::nullopt;
  }
  return std::string(buffer);
}

}  // namespace npusim::tools

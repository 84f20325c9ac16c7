#include "runtime/ConfigFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/Error.h"

namespace npusim::runtime {
namespace {

[[noreturn]] void refuse(const std::string& path, std::string_view what, const std::string& reason) {
  throw ConfigError(std::string(what) + " " + printableText(path, 4096) + " cannot be read: " + reason);
}

class ScopedDescriptor {
 public:
  explicit ScopedDescriptor(int fd) : fd_(fd) {}
  ~ScopedDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedDescriptor(const ScopedDescriptor&) = delete;
  ScopedDescriptor& operator=(const ScopedDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string readConfigFile(const std::string& path, std::string_view what, std::size_t maxBytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  ScopedDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.get() < 0) refuse(path, what, std::strerror(errno));
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) refuse(path, what, std::strerror(errno));
  if (S_ISDIR(status.st_mode)) refuse(path, what, "it is a directory, not a regular file");
  if (!S_ISREG(status.st_mode)) {
    const char* kind = S_ISFIFO(status.st_mode)   ? "a FIFO"
                       : S_ISCHR(status.st_mode)  ? "a character device"
                       : S_ISBLK(status.st_mode)  ? "a block device"
                       : S_ISSOCK(status.st_mode) ? "a socket"
                                                  : "not a regular file";
    refuse(path, what, std::string("it is ") + kind + ", not a regular file");
  }
  if (static_cast<std::size_t>(status.st_size) > maxBytes) {
    refuse(path, what, "it is larger than " + std::to_string(maxBytes) + " bytes");
  }
  std::string content;
  char buffer[8192];
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      refuse(path, what, std::strerror(errno));
    }
    if (got == 0) break;
    content.append(buffer, static_cast<std::size_t>(got));
    // The size may change while reading (a file being written, /proc files).
    if (content.size() > maxBytes) refuse(path, what, "it is larger than " + std::to_string(maxBytes) + " bytes");
  }
  return content;
}

std::string printableText(std::string_view text, std::size_t maxLength) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string result;
  for (const char character : text) {
    if (result.size() >= maxLength) {
      result += "...";
      break;
    }
    const auto code = static_cast<unsigned char>(character);
    if (code < 0x20 || code >= 0x7f) {
      result += "\\x";
      result += kHex[code >> 4];
      result += kHex[code & 0xf];
    } else {
      result += character;
    }
  }
  return result;
}

}  // namespace npusim::runtime

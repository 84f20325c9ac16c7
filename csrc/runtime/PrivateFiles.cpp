#include "runtime/PrivateFiles.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include "runtime/Error.h"

namespace npusim::runtime {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    reset(other.release());
  }
  return *this;
}

FileDescriptor::~FileDescriptor() { reset(); }

int FileDescriptor::release() noexcept {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void FileDescriptor::reset(int fd) noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
  }
  fd_ = fd;
}

namespace {

std::string errnoText(int error) { return std::generic_category().message(error); }

std::string octalMode(mode_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0%o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

[[noreturn]] void refuse(const char* call, const std::string& path, const std::string& reason) {
  throw RuntimeError(ErrorCode::kRtNoPermission, call, "Refusing to use " + path + ": " + reason + ".");
}

// A system call failed for a reason other than a deliberate refusal. Permission
// errors keep the permission code; everything else is reported as `code`.
[[noreturn]] void systemFailure(ErrorCode code, const char* call, const std::string& action, int error) {
  if (error == EACCES || error == EPERM) {
    code = ErrorCode::kRtNoPermission;
  }
  throw RuntimeError(code, call, "Cannot " + action + ": " + errnoText(error) + ".");
}

void checkSingleComponent(const char* call, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw RuntimeError(ErrorCode::kRtParamInvalid, call,
                       "'" + name + "' is not a valid file name (one path component expected).");
  }
}

std::vector<std::string> splitComponents(const std::string& path) {
  std::vector<std::string> components;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    std::string component = path.substr(start, end - start);
    if (!component.empty() && component != ".") {
      components.push_back(std::move(component));
    }
    start = end + 1;
  }
  return components;
}

// The final directory must belong to us and be closed to other writers.
void verifyFinalDirectory(const char* call, const std::string& shown, const struct stat& status) {
  const uid_t self = ::geteuid();
  if (status.st_uid != self) {
    refuse(call, shown,
           "it is owned by uid " + std::to_string(status.st_uid) + ", not by the current user (uid " +
               std::to_string(self) + ")");
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    refuse(call, shown,
           "it is writable by group or others (mode " + octalMode(status.st_mode) + "); remove that with chmod go-w");
  }
}

// Walks `path` component by component. Returns an invalid descriptor when a
// component is missing and `create` is false.
FileDescriptor walkToPrivateDirectory(const std::string& path, bool create, const char* call) {
  if (path.empty() || path.find('\0') != std::string::npos) {
    throw RuntimeError(ErrorCode::kRtParamInvalid, call, "The directory path is empty or invalid.");
  }
  const bool absolute = path.front() == '/';
  const std::vector<std::string> components = splitComponents(path);
  const char* start = absolute ? "/" : ".";

  if (components.empty()) {
    FileDescriptor directory(::open(start, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory.valid()) {
      systemFailure(ErrorCode::kRtOpenFile, call, "open directory " + path, errno);
    }
    struct stat status {};
    if (::fstat(directory.get(), &status) != 0) {
      systemFailure(ErrorCode::kRtOpenFile, call, "inspect directory " + path, errno);
    }
    verifyFinalDirectory(call, path, status);
    return directory;
  }

  FileDescriptor current(::open(start, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!current.valid()) {
    systemFailure(ErrorCode::kRtOpenFile, call, std::string("open directory ") + start, errno);
  }
  std::string shown = absolute ? "" : ".";
  const uid_t self = ::geteuid();

  for (std::size_t index = 0; index < components.size(); ++index) {
    const std::string& name = components[index];
    const bool last = index + 1 == components.size();
    shown += "/" + name;
    if (!absolute && index == 0) {
      shown = name;
    }

    struct stat before {};
    bool created = false;
    if (::fstatat(current.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
      const int error = errno;
      if (error != ENOENT) {
        systemFailure(ErrorCode::kRtOpenFile, call, "inspect " + shown, error);
      }
      if (!create) {
        return FileDescriptor();
      }
      if (::mkdirat(current.get(), name.c_str(), 0700) == 0) {
        created = true;
      } else if (errno != EEXIST) {  // EEXIST: another process created it meanwhile
        systemFailure(ErrorCode::kRtOpenFile, call, "create directory " + shown, errno);
      }
      if (::fstatat(current.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
        systemFailure(ErrorCode::kRtOpenFile, call, "inspect " + shown, errno);
      }
    }

    if (S_ISLNK(before.st_mode)) {
      if (last) {
        refuse(call, shown, "it is a symbolic link, and a link here is never followed");
      }
      if (before.st_uid != 0 && before.st_uid != self) {
        refuse(call, shown,
               "it is a symbolic link owned by uid " + std::to_string(before.st_uid) +
                   ", neither root nor the current user (uid " + std::to_string(self) + ")");
      }
      // A trusted link in the middle of the path (e.g. /var/run -> /run).
      FileDescriptor next(::openat(current.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!next.valid()) {
        if (errno == ENOTDIR) {
          refuse(call, shown, "it is a symbolic link to something that is not a directory");
        }
        systemFailure(ErrorCode::kRtOpenFile, call, "open " + shown, errno);
      }
      current = std::move(next);
      continue;
    }
    if (!S_ISDIR(before.st_mode)) {
      refuse(call, shown, "it exists and is not a directory");
    }

    // O_PATH suffices to walk through a directory (search permission only);
    // the final directory and the ones we created need a real descriptor.
    const int access = (last || created) ? O_RDONLY : O_PATH;
    FileDescriptor next(::openat(current.get(), name.c_str(), access | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) {
      const int error = errno;
      if (error == ELOOP || error == ENOTDIR) {
        refuse(call, shown, "it was replaced while being opened");
      }
      systemFailure(ErrorCode::kRtOpenFile, call, "open directory " + shown, error);
    }
    struct stat opened {};
    if (::fstat(next.get(), &opened) != 0) {
      systemFailure(ErrorCode::kRtOpenFile, call, "inspect directory " + shown, errno);
    }
    if (opened.st_dev != before.st_dev || opened.st_ino != before.st_ino) {
      refuse(call, shown, "it was replaced while being opened");
    }
    if (created) {
      if (opened.st_uid != self) {
        refuse(call, shown, "the directory just created belongs to another user");
      }
      // mkdir's mode is reduced by the umask; set exactly 0700.
      if ((opened.st_mode & 07777) != 0700) {
        if (::fchmod(next.get(), 0700) != 0) {
          systemFailure(ErrorCode::kRtOpenFile, call, "set mode 0700 on " + shown, errno);
        }
        opened.st_mode = (opened.st_mode & ~static_cast<mode_t>(07777)) | 0700;
      }
    }
    if (last) {
      verifyFinalDirectory(call, shown, opened);
    }
    current = std::move(next);
  }
  return current;
}

std::atomic<unsigned long> temporaryFileCounter{0};

FileDescriptor openVerifiedFile(int directoryFd, const char* pathForOpen, const std::string& shown, int extraFlags,
                                const char* call) {
  // O_NONBLOCK: a FIFO planted in place of the file must not block the open;
  // O_TRUNC is applied only after the checks, so that a file we refuse is
  // never truncated.
  const bool truncate = (extraFlags & O_TRUNC) != 0;
  const bool keepNonBlocking = (extraFlags & O_NONBLOCK) != 0;
  const int flags = (extraFlags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  FileDescriptor file(::openat(directoryFd, pathForOpen, flags, 0600));
  if (!file.valid()) {
    const int error = errno;
    if (error == ELOOP) {
      refuse(call, shown, "it is a symbolic link, and a link here is never followed");
    }
    if (error == EISDIR || error == ENXIO) {
      refuse(call, shown, "it is not a regular file");
    }
    systemFailure(ErrorCode::kRtOpenFile, call, "open " + shown, error);
  }
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) {
    systemFailure(ErrorCode::kRtOpenFile, call, "inspect " + shown, errno);
  }
  if (!S_ISREG(status.st_mode)) {
    refuse(call, shown, "it is not a regular file");
  }
  const uid_t self = ::geteuid();
  if (status.st_uid != self) {
    refuse(call, shown,
           "it is owned by uid " + std::to_string(status.st_uid) + ", not by the current user (uid " +
               std::to_string(self) + ")");
  }
  if (!keepNonBlocking) {
    const int current = ::fcntl(file.get(), F_GETFL);
    if (current < 0 || ::fcntl(file.get(), F_SETFL, current & ~O_NONBLOCK) != 0) {
      systemFailure(ErrorCode::kRtOpenFile, call, "configure " + shown, errno);
    }
  }
  if (truncate && ::ftruncate(file.get(), 0) != 0) {
    systemFailure(ErrorCode::kRtWriteFile, call, "truncate " + shown, errno);
  }
  return file;
}

void writeAll(int fd, std::string_view content, const char* call, const std::string& shown) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      systemFailure(ErrorCode::kRtWriteFile, call, "write " + shown, errno);
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
}

}  // namespace

void ensurePrivateDirectory(const std::string& path) {
  walkToPrivateDirectory(path, /*create=*/true, "ensurePrivateDirectory");
}

int openPrivateDirectory(const std::string& path) {
  return walkToPrivateDirectory(path, /*create=*/true, "openPrivateDirectory").release();
}

int openExistingPrivateDirectory(const std::string& path) {
  return walkToPrivateDirectory(path, /*create=*/false, "openExistingPrivateDirectory").release();
}

int openPrivateFile(const std::string& path, int extraFlags) {
  const char* call = "openPrivateFile";
  if (path.empty() || path.find('\0') != std::string::npos) {
    throw RuntimeError(ErrorCode::kRtParamInvalid, call, "The file path is empty or invalid.");
  }
  return openVerifiedFile(AT_FDCWD, path.c_str(), path, extraFlags, call).release();
}

int openPrivateFileAt(int directoryFd, const std::string& name, int extraFlags) {
  const char* call = "openPrivateFileAt";
  checkSingleComponent(call, name);
  return openVerifiedFile(directoryFd, name.c_str(), name, extraFlags, call).release();
}

void writeFileAtomically(const std::string& directory, const std::string& name, std::string_view content) {
  const char* call = "writeFileAtomically";
  checkSingleComponent(call, name);
  FileDescriptor directoryFd(openPrivateDirectory(directory));
  const std::string target = directory + "/" + name;

  std::string temporary;
  FileDescriptor file;
  for (int attempt = 0; attempt < 100 && !file.valid(); ++attempt) {
    temporary = "." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
                std::to_string(temporaryFileCounter.fetch_add(1, std::memory_order_relaxed));
    file.reset(::openat(directoryFd.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600));
    if (!file.valid() && errno != EEXIST) {
      systemFailure(ErrorCode::kRtOpenFile, call, "create a temporary file for " + target, errno);
    }
  }
  if (!file.valid()) {
    throw RuntimeError(ErrorCode::kRtOpenFile, call, "Cannot create a temporary file for " + target + ".");
  }

  try {
    writeAll(file.get(), content, call, target);
    if (::close(file.release()) != 0) {
      systemFailure(ErrorCode::kRtWriteFile, call, "write " + target, errno);
    }
    if (::renameat(directoryFd.get(), temporary.c_str(), directoryFd.get(), name.c_str()) != 0) {
      systemFailure(ErrorCode::kRtWriteFile, call, "replace " + target, errno);
    }
  } catch (...) {
    ::unlinkat(directoryFd.get(), temporary.c_str(), 0);
    throw;
  }
}

}  // namespace npusim::runtime

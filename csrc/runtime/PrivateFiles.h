// Safe creation of per-user files and directories (plog logs, live status files).
//
// Log and status files live in places other users may also write to (/tmp, a
// shared ASCEND_PROCESS_LOG_PATH). Opening them by path alone would let another
// user plant a symbolic link there and make this process write to, or chmod, a
// file of the attacker's choosing. The functions below therefore walk paths one
// component at a time with openat(), never follow a link in the final
// component, follow a link in an earlier component only when it belongs to root
// or to the current user, and check the final directory's owner and mode.
//
// Every refusal raises RuntimeError(ErrorCode::kRtNoPermission, <function>,
// <detail>) where the detail names the path and the reason; a system call that
// fails for another reason raises kRtOpenFile or kRtWriteFile with errno's text.
#pragma once

#include <string>
#include <string_view>

namespace npusim::runtime {

// Move-only owner of a POSIX file descriptor; closes it on destruction.
class FileDescriptor {
 public:
  FileDescriptor() noexcept = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  // Gives up ownership and returns the descriptor.
  int release() noexcept;
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// Creates the missing components of `path` (mode 0700, exactly, whatever the
// umask) and checks the final directory: it must not be a symbolic link, must
// be a directory, must be owned by the effective uid and must not be writable
// by group or others. Earlier components may be symbolic links only when the
// link is owned by root or by the current user (system layouts such as
// /var/run -> /run); a link owned by anyone else is refused.
void ensurePrivateDirectory(const std::string& path);

// As ensurePrivateDirectory, and returns a descriptor of the verified directory
// (O_RDONLY | O_DIRECTORY | O_CLOEXEC) for use with the *at() calls, so that
// later operations cannot be redirected by renaming a path component.
int openPrivateDirectory(const std::string& path);

// As openPrivateDirectory but creates nothing: returns -1 when some component
// of `path` does not exist. A directory that exists and fails the checks is
// still refused with an exception.
int openExistingPrivateDirectory(const std::string& path);

// Opens `path` with O_NOFOLLOW | O_CLOEXEC | extraFlags (mode 0600 when
// O_CREAT is among extraFlags; give O_RDONLY, O_WRONLY or O_RDWR there too).
// Refuses a symbolic link, anything that is not a regular file (a FIFO planted
// in place of the file does not block the open), and a file owned by another
// user. Returns the descriptor, which the caller closes.
int openPrivateFile(const std::string& path, int extraFlags);

// As openPrivateFile for the entry `name` (a single path component) of the
// directory open as `directoryFd`.
int openPrivateFileAt(int directoryFd, const std::string& name, int extraFlags);

// Replaces `directory`/`name` with `content` so that a reader sees either the
// old or the new file, never a partial one: writes a uniquely named temporary
// file (mode 0600) in the same directory, then rename()s it over `name`. The
// directory is created private as by ensurePrivateDirectory. A symbolic link
// planted at `name` is replaced, never followed. No fsync: the files written
// this way are volatile runtime state, not data that must survive a crash.
void writeFileAtomically(const std::string& directory, const std::string& name, std::string_view content);

}  // namespace npusim::runtime

#include "runtime/StatusRegistry.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "runtime/Error.h"
#include "runtime/PrivateFiles.h"

namespace npusim::runtime {

namespace {

constexpr std::size_t kMaximumStatusFileBytes = 1 << 20;
constexpr std::string_view kStatusSuffix = ".status";

std::string environmentValue(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

template <typename Integer>
std::optional<Integer> parseUnsigned(std::string_view text) {
  Integer value{};
  if (text.empty() || text.front() < '0' || text.front() > '9') {
    return std::nullopt;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::string printable(std::string_view text) {
  std::string result(text);
  for (char& character : result) {
    const auto code = static_cast<unsigned char>(character);
    if (code < 0x20 || code == 0x7f) {
      character = '?';
    }
  }
  return result;
}

// The pid named by "<pid>.status", or nullopt for any other name.
std::optional<int> pidFromFileName(std::string_view name) {
  if (name.size() <= kStatusSuffix.size() || !name.ends_with(kStatusSuffix)) {
    return std::nullopt;
  }
  std::optional<int> pid = parseUnsigned<int>(name.substr(0, name.size() - kStatusSuffix.size()));
  if (!pid || *pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

std::optional<std::string> readSmallFile(int fd, std::size_t limit) {
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return std::nullopt;
    }
    if (got == 0) {
      return content;
    }
    content.append(buffer, static_cast<std::size_t>(got));
    if (content.size() > limit) {
      return std::nullopt;
    }
  }
}

struct ProcessState {
  char state;           // field 3 of /proc/<pid>/stat, e.g. 'R', 'S', 'Z'
  uint64_t startTicks;  // field 22
};

std::optional<ProcessState> readProcessState(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file.valid()) {
    return std::nullopt;
  }
  std::optional<std::string> text = readSmallFile(file.get(), 64 * 1024);
  if (!text) {
    return std::nullopt;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the
  // fields start after the last ')'.
  const std::size_t close = text->rfind(')');
  if (close == std::string::npos) {
    return std::nullopt;
  }
  std::vector<std::string_view> fields;
  std::string_view rest = std::string_view(*text).substr(close + 1);
  while (!rest.empty() && fields.size() < 20) {
    const std::size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (fields.size() < 20 || fields[0].size() != 1) {
    return std::nullopt;
  }
  std::optional<uint64_t> start = parseUnsigned<uint64_t>(fields[19]);  // field 22
  if (!start) {
    return std::nullopt;
  }
  return ProcessState{fields[0][0], *start};
}

bool processIsAlive(int pid, uint64_t recordedStartTicks) {
  if (pid <= 0) {
    return false;
  }
  if (::kill(pid, 0) != 0) {
    // ESRCH: gone. EPERM: the pid now belongs to another user's process, and
    // status files are only written by this user's processes: a reused pid.
    return false;
  }
  std::optional<ProcessState> state = readProcessState(pid);
  if (!state) {
    return true;  // no /proc: trust kill()
  }
  if (state->state == 'Z' || state->state == 'X') {
    return false;  // exited, not yet reaped
  }
  return recordedStartTicks == 0 || state->startTicks == recordedStartTicks;
}

std::optional<DeviceUsage> parseDeviceLine(std::string_view line) {
  std::optional<int> device;
  std::optional<uint64_t> memory;
  std::optional<uint64_t> reserved;
  std::optional<uint64_t> busy;
  uint64_t simulated = 0;
  while (!line.empty()) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) {
      break;
    }
    line.remove_prefix(start);
    const std::size_t end = std::min(line.find(' '), line.size());
    const std::string_view token = line.substr(0, end);
    line.remove_prefix(end);
    const std::size_t equals = token.find('=');
    if (equals == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view key = token.substr(0, equals);
    const std::string_view value = token.substr(equals + 1);
    if (key == "device") {
      device = parseUnsigned<int>(value);
      if (!device) return std::nullopt;
    } else if (key == "memory_bytes") {
      memory = parseUnsigned<uint64_t>(value);
      if (!memory) return std::nullopt;
    } else if (key == "reserved_bytes") {
      reserved = parseUnsigned<uint64_t>(value);
      if (!reserved) return std::nullopt;
    } else if (key == "busy_ns") {
      busy = parseUnsigned<uint64_t>(value);
      if (!busy) return std::nullopt;
    } else if (key == "simulated_ns") {
      const std::optional<uint64_t> parsed = parseUnsigned<uint64_t>(value);
      if (!parsed) return std::nullopt;
      simulated = *parsed;
    }
  }
  if (!device || !memory || !reserved || !busy) {
    return std::nullopt;
  }
  return DeviceUsage{*device, *memory, *reserved, *busy, simulated};
}

// Removing the status file when SIGINT or SIGTERM ends the process: the
// handler may only make async-signal-safe calls, so the path is kept ready in
// a static buffer, written by the publisher under its mutex while `ready` is 0.
char signalRemovalPath[4096];
volatile sig_atomic_t signalRemovalReady = 0;
volatile sig_atomic_t signalRemovalPid = 0;
struct sigaction previousActions[2];  // SIGINT, SIGTERM
bool signalHandlersInstalled = false;

void removeStatusOnSignal(int signal, siginfo_t* info, void* context) {
  const int savedErrno = errno;
  if (signalRemovalReady && signalRemovalPid == ::getpid()) ::unlink(signalRemovalPath);
  errno = savedErrno;
  // Chain to what was there before: Python's SIGINT handler (KeyboardInterrupt;
  // the process may go on and publishes its file again), or the default action.
  const struct sigaction& previous = previousActions[signal == SIGINT ? 0 : 1];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler == SIG_DFL) {
    // Die of the same signal: it is blocked while this handler runs and
    // delivered, with the default action, when it returns.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  previous.sa_handler(signal);
}

void installSignalRemoval() {
  if (signalHandlersInstalled) return;
  signalHandlersInstalled = true;
  const int signals[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; ++i) {
    struct sigaction action {};
    action.sa_sigaction = &removeStatusOnSignal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (::sigaction(signals[i], &action, &previousActions[i]) != 0) previousActions[i] = {};
  }
}

void setSignalRemovalPath(const std::string& path, int pid) {
  signalRemovalReady = 0;
  if (path.size() >= sizeof signalRemovalPath) return;
  std::memcpy(signalRemovalPath, path.c_str(), path.size() + 1);
  signalRemovalPid = pid;
  signalRemovalReady = 1;
}

uint64_t unixMillisecondsNow() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::string currentProcessName() {
  std::string name;
  if (FILE* comm = std::fopen("/proc/self/comm", "re")) {
    char buffer[64] = {};
    if (std::fgets(buffer, sizeof buffer, comm) != nullptr) {
      name = buffer;
    }
    std::fclose(comm);
  }
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) {
    name.pop_back();
  }
  return name.empty() ? std::string(program_invocation_short_name) : name;
}

}  // namespace

std::string statusDirectory() {
  std::string explicitDirectory = environmentValue("NPUSIM_RUNTIME_DIR");
  if (!explicitDirectory.empty()) {
    return explicitDirectory;
  }
  std::string runtimeDirectory = environmentValue("XDG_RUNTIME_DIR");
  if (!runtimeDirectory.empty()) {
    while (runtimeDirectory.size() > 1 && runtimeDirectory.back() == '/') {
      runtimeDirectory.pop_back();
    }
    return runtimeDirectory == "/" ? "/npusim" : runtimeDirectory + "/npusim";
  }
  return "/tmp/npusim-" + std::to_string(::geteuid());
}

std::string formatStatusFile(const ProcessStatus& status, uint64_t processStartTicks) {
  std::string text = "# npusim live status; format described in csrc/runtime/StatusRegistry.h\n";
  text += "format=1\n";
  text += "pid=" + std::to_string(status.pid) + "\n";
  text += "process_start_ticks=" + std::to_string(processStartTicks) + "\n";
  text += "process_name=" + printable(status.processName) + "\n";
  text += "soc_name=" + printable(status.socName) + "\n";
  text += "updated_unix_ms=" + std::to_string(status.updatedUnixMs) + "\n";
  for (const DeviceUsage& device : status.devices) {
    text += "device=" + std::to_string(device.physicalDevice) + " memory_bytes=" + std::to_string(device.memoryBytes) +
            " reserved_bytes=" + std::to_string(device.reservedBytes) + " busy_ns=" + std::to_string(device.busyNs) +
            " simulated_ns=" + std::to_string(device.simulatedNs) + "\n";
  }
  return text;
}

std::optional<ParsedStatusFile> parseStatusFile(std::string_view text) {
  if (text.empty() || text.back() != '\n') {
    return std::nullopt;  // a file cut short
  }
  ParsedStatusFile parsed{ProcessStatus{0, {}, {}, 0, {}}, 0};
  bool haveFormat = false;
  bool havePid = false;
  bool haveUpdated = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty() || line.front() == '#') {
      continue;
    }
    if (line.starts_with("device=")) {
      std::optional<DeviceUsage> device = parseDeviceLine(line);
      if (!device) {
        return std::nullopt;
      }
      parsed.status.devices.push_back(*device);
      continue;
    }
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return std::nullopt;
    }
    const std::string_view key = line.substr(0, equals);
    const std::string_view value = line.substr(equals + 1);
    if (key == "format") {
      if (value != "1") {
        return std::nullopt;
      }
      haveFormat = true;
    } else if (key == "pid") {
      std::optional<int> pid = parseUnsigned<int>(value);
      if (!pid || *pid <= 0) {
        return std::nullopt;
      }
      parsed.status.pid = *pid;
      havePid = true;
    } else if (key == "process_start_ticks") {
      std::optional<uint64_t> ticks = parseUnsigned<uint64_t>(value);
      if (!ticks) {
        return std::nullopt;
      }
      parsed.processStartTicks = *ticks;
    } else if (key == "process_name") {
      parsed.status.processName = std::string(value);
    } else if (key == "soc_name") {
      parsed.status.socName = std::string(value);
    } else if (key == "updated_unix_ms") {
      std::optional<uint64_t> updated = parseUnsigned<uint64_t>(value);
      if (!updated) {
        return std::nullopt;
      }
      parsed.status.updatedUnixMs = *updated;
      haveUpdated = true;
    }
  }
  if (!haveFormat || !havePid || !haveUpdated) {
    return std::nullopt;
  }
  return parsed;
}

std::optional<uint64_t> processStartTicks(int pid) {
  std::optional<ProcessState> state = readProcessState(pid);
  if (!state) {
    return std::nullopt;
  }
  return state->startTicks;
}

std::vector<ProcessStatus> readLiveStatuses(const std::string& directory) {
  std::vector<ProcessStatus> statuses;
  FileDescriptor directoryFd(openExistingPrivateDirectory(directory));
  if (!directoryFd.valid()) {
    return statuses;
  }
  // fdopendir() takes its own descriptor; the original stays for openat().
  const int listingFd = ::fcntl(directoryFd.get(), F_DUPFD_CLOEXEC, 0);
  if (listingFd < 0) {
    return statuses;
  }
  DIR* listing = ::fdopendir(listingFd);
  if (listing == nullptr) {
    ::close(listingFd);
    return statuses;
  }
  std::vector<std::pair<std::string, int>> candidates;
  while (const struct dirent* entry = ::readdir(listing)) {
    if (std::optional<int> pid = pidFromFileName(entry->d_name)) {
      candidates.emplace_back(entry->d_name, *pid);
    }
  }
  ::closedir(listing);

  for (const auto& [name, pid] : candidates) {
    std::optional<std::string> text;
    try {
      // Refuses links, non-regular files and files of other users.
      FileDescriptor file(openPrivateFileAt(directoryFd.get(), name, O_RDONLY));
      text = readSmallFile(file.get(), kMaximumStatusFileBytes);
    } catch (const RuntimeError&) {
      continue;
    }
    if (!text) {
      continue;
    }
    std::optional<ParsedStatusFile> parsed = parseStatusFile(*text);
    if (!parsed || parsed->status.pid != pid) {
      continue;
    }
    if (!processIsAlive(pid, parsed->processStartTicks)) {
      // The file of a process that died without removing it (SIGKILL, a
      // crash): reaped here, so that the directory does not fill up.
      ::unlinkat(directoryFd.get(), name.c_str(), 0);
      continue;
    }
    statuses.push_back(std::move(parsed->status));
  }
  std::sort(statuses.begin(), statuses.end(),
            [](const ProcessStatus& left, const ProcessStatus& right) { return left.pid < right.pid; });
  return statuses;
}

StatusPublisher& StatusPublisher::instance() {
  static StatusPublisher* const publisher = [] {
    StatusPublisher* created = new StatusPublisher();  // never destroyed: used from atexit
    ::pthread_atfork([] { StatusPublisher::instance().forkPrepare(); },
                     [] { StatusPublisher::instance().forkParent(); },
                     [] { StatusPublisher::instance().forkChild(); });
    return created;
  }();
  return *publisher;
}

// Hold the mutex across fork() so that the child does not inherit it locked
// by a thread that does not exist there. The child has published nothing yet.
void StatusPublisher::forkPrepare() { mutex_.lock(); }

void StatusPublisher::forkParent() { mutex_.unlock(); }

void StatusPublisher::forkChild() {
  pending_.reset();
  hasWritten_ = false;
  mutex_.unlock();
}

bool StatusPublisher::publish(const ProcessStatus& status) { return publish(status, false); }

bool StatusPublisher::publish(const ProcessStatus& status, bool force) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!force && hasWritten_ && now - lastWrite_ < kMinimumInterval) {
    try {
      pending_ = status;
    } catch (...) {
    }
    return false;
  }
  pending_.reset();
  return writeLocked(status);
}

bool StatusPublisher::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_) {
    return false;
  }
  ProcessStatus status = std::move(*pending_);
  pending_.reset();
  return writeLocked(std::move(status));
}

bool StatusPublisher::writeLocked(ProcessStatus status) {
  const int pid = static_cast<int>(::getpid());
  std::string directory;
  try {
    status.pid = pid;
    if (status.processName.empty()) {
      status.processName = currentProcessName();
    }
    if (status.updatedUnixMs == 0) {
      status.updatedUnixMs = unixMillisecondsNow();
    }
    // Keep writing where this process's file already is, even if the
    // environment changed since; a forked child starts afresh.
    directory = publishedPid_ == pid ? publishedDirectory_ : statusDirectory();
    if (startTicksPid_ != pid) {
      processStartTicks_ = processStartTicks(pid).value_or(0);
      startTicksPid_ = pid;
    }
    writeFileAtomically(directory, std::to_string(pid) + std::string(kStatusSuffix),
                        formatStatusFile(status, processStartTicks_));
  } catch (const std::exception& error) {
    if (!warned_) {
      warned_ = true;
      const RuntimeError* runtimeError = dynamic_cast<const RuntimeError*>(&error);
      std::fprintf(stderr, "[npusim] Warning: cannot publish the device status in %s: %s npu-smi will not show this process.\n",
                   directory.c_str(), runtimeError != nullptr ? runtimeError->detail().c_str() : error.what());
    }
    return false;
  }
  lastWrite_ = std::chrono::steady_clock::now();
  hasWritten_ = true;
  warned_ = false;  // warn again if writing fails after this success
  publishedPid_ = pid;
  publishedDirectory_ = std::move(directory);
  setSignalRemovalPath(publishedDirectory_ + "/" + std::to_string(pid) + std::string(kStatusSuffix), pid);
  installSignalRemoval();
  if (!exitHandlerRegistered_) {
    exitHandlerRegistered_ = true;
    std::atexit([] { StatusPublisher::instance().withdraw(); });
  }
  return true;
}

void StatusPublisher::withdraw() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.reset();
  hasWritten_ = false;
  const int pid = static_cast<int>(::getpid());
  if (publishedPid_ != pid) {
    return;  // nothing written by this process (a forked child keeps its parent's record)
  }
  publishedPid_ = -1;
  signalRemovalReady = 0;
  try {
    FileDescriptor directoryFd(openExistingPrivateDirectory(publishedDirectory_));
    if (directoryFd.valid()) {
      const std::string name = std::to_string(pid) + std::string(kStatusSuffix);
      ::unlinkat(directoryFd.get(), name.c_str(), 0);
    }
  } catch (...) {
    // The directory became unsafe: leave it alone; readers skip a dead pid.
  }
  publishedDirectory_.clear();
}

}  // namespace npusim::runtime

#include "runtime/Plog.h"

#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <vector>

#include "runtime/Error.h"
#include "runtime/PrivateFiles.h"

namespace npusim::runtime {

const char* logLevelName(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kNull: return "NULL";
    case LogLevel::kEvent: return "EVENT";
  }
  return "UNKNOWN";
}

namespace {

constexpr const char* kLogLevelMessage = "ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4.";

// The environment value, or nullopt when unset or empty.
std::optional<std::string> environmentValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

std::string_view trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  const std::size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

LogLevel levelFromEnvironment() {
  const std::optional<std::string> value = environmentValue("ASCEND_GLOBAL_LOG_LEVEL");
  if (!value) {
    return LogLevel::kError;
  }
  const std::string_view text = trimmed(*value);
  if (text.size() != 1 || text[0] < '0' || text[0] > '4') {
    throw ConfigError(kLogLevelMessage);
  }
  return static_cast<LogLevel>(text[0] - '0');
}

bool printToStdoutFromEnvironment() {
  const std::optional<std::string> value = environmentValue("ASCEND_SLOG_PRINT_TO_STDOUT");
  if (!value) {
    return false;
  }
  const std::string_view text = trimmed(*value);
  if (text == "0") {
    return false;
  }
  if (text == "1") {
    return true;
  }
  throw ConfigError("ASCEND_SLOG_PRINT_TO_STDOUT should be 0 (write logs to files) or 1 (print logs to stdout), got '" +
                    *value + "'.");
}

bool eventEnabledFromEnvironment() {
  // CANN: an unset, empty or invalid value means the default, enabled.
  const std::optional<std::string> value = environmentValue("ASCEND_GLOBAL_EVENT_ENABLE");
  return !(value && trimmed(*value) == "0");
}

std::string homeDirectory() {
  if (std::optional<std::string> home = environmentValue("HOME")) {
    return *home;
  }
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  struct passwd entry {};
  struct passwd* result = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return {};
}

std::string withoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

std::string rootDirectoryFromEnvironment() {
  if (std::optional<std::string> path = environmentValue("ASCEND_PROCESS_LOG_PATH")) {
    return withoutTrailingSlashes(*path);
  }
  if (std::optional<std::string> work = environmentValue("ASCEND_WORK_PATH")) {
    return withoutTrailingSlashes(*work) + "/log";
  }
  std::string home = homeDirectory();
  if (home.empty()) {
    return {};
  }
  return withoutTrailingSlashes(home) + "/ascend/log";
}

std::string joinPath(const std::string& directory, const char* relative) {
  return directory == "/" ? "/" + std::string(relative) : directory + "/" + relative;
}

// The kernel's name for this process (what ps shows), e.g. "python3".
const std::string& processName() {
  static const std::string* name = [] {
    std::string result;
    if (FILE* comm = std::fopen("/proc/self/comm", "re")) {
      char buffer[64] = {};
      if (std::fgets(buffer, sizeof buffer, comm) != nullptr) {
        result = buffer;
      }
      std::fclose(comm);
    }
    while (!result.empty() && (result.back() == '\n' || result.back() == '\r')) {
      result.pop_back();
    }
    if (result.empty()) {
      result = program_invocation_short_name;
    }
    return new std::string(std::move(result));  // never destroyed: logging may outlive statics
  }();
  return *name;
}

long threadId() { return static_cast<long>(::syscall(SYS_gettid)); }

struct LocalTime {
  struct tm calendar {};
  long microseconds = 0;
};

LocalTime now() {
  struct timespec spec {};
  ::clock_gettime(CLOCK_REALTIME, &spec);
  LocalTime result;
  const time_t seconds = spec.tv_sec;
  ::localtime_r(&seconds, &result.calendar);
  result.microseconds = spec.tv_nsec / 1000;
  return result;
}

// Writes all of `text`; false on an error.
bool writeAll(int fd, std::string_view text) noexcept {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

void warn(const std::string& text) noexcept {
  std::fprintf(stderr, "[npusim] Warning: %s\n", text.c_str());
}

}  // namespace

PlogSettings plogSettingsFromEnvironment() {
  PlogSettings settings;
  settings.level = levelFromEnvironment();
  settings.printToStdout = printToStdoutFromEnvironment();
  settings.eventEnabled = eventEnabledFromEnvironment();
  settings.rootDirectory = rootDirectoryFromEnvironment();
  return settings;
}

Plog& Plog::instance() {
  static Plog* const writer = [] {
    Plog* created = new Plog();  // never destroyed, see the header
    ::pthread_atfork([] { Plog::instance().forkPrepare(); }, [] { Plog::instance().forkParent(); },
                     [] { Plog::instance().forkChild(); });
    return created;
  }();
  return *writer;
}

Plog::Plog() {
  // Never throws: a variable that does not parse falls back to its default
  // and the error is kept for validateConfiguration().
  PlogSettings settings;
  try {
    settings.level = levelFromEnvironment();
  } catch (const ConfigError& error) {
    configurationError_ = error.what();
  }
  try {
    settings.printToStdout = printToStdoutFromEnvironment();
  } catch (const ConfigError& error) {
    if (!configurationError_) {
      configurationError_ = error.what();
    }
  }
  settings.eventEnabled = eventEnabledFromEnvironment();
  settings.rootDirectory = rootDirectoryFromEnvironment();
  apply(std::move(settings));
}

void Plog::apply(PlogSettings settings) {
  level_.store(static_cast<int>(settings.level), std::memory_order_relaxed);
  eventEnabled_.store(settings.eventEnabled, std::memory_order_relaxed);
  printToStdout_.store(settings.printToStdout, std::memory_order_relaxed);
  rootDirectory_ = std::move(settings.rootDirectory);
}

bool Plog::enabled(LogLevel level) const noexcept {
  switch (level) {
    case LogLevel::kEvent: return eventEnabled_.load(std::memory_order_relaxed);
    case LogLevel::kNull: return false;
    case LogLevel::kDebug:
    case LogLevel::kInfo:
    case LogLevel::kWarning:
    case LogLevel::kError: return static_cast<int>(level) >= level_.load(std::memory_order_relaxed);
  }
  return false;
}

void Plog::write(LogLevel level, std::string_view module, std::string_view file, int line,
                 std::string_view message) noexcept {
  if (!enabled(level)) {
    return;
  }
  try {
    const int pid = static_cast<int>(::getpid());
    const LocalTime time = now();
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02d-%02d:%02d:%02d.%03ld.%03ld", time.calendar.tm_year + 1900,
                  time.calendar.tm_mon + 1, time.calendar.tm_mday, time.calendar.tm_hour, time.calendar.tm_min,
                  time.calendar.tm_sec, time.microseconds / 1000, time.microseconds % 1000);

    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
      message.remove_suffix(1);
    }
    std::string text;
    text.reserve(96 + module.size() + file.size() + message.size());
    text += '[';
    text += logLevelName(level);
    text += "] ";
    text += module;
    text += '(';
    text += std::to_string(pid);
    text += ',';
    text += processName();
    text += "):";
    text += stamp;
    text += " [";
    text += file;
    text += ':';
    text += std::to_string(line);
    text += ']';
    text += std::to_string(threadId());
    text += ' ';
    for (char character : message) {
      text += (character == '\n' || character == '\r') ? ' ' : character;
    }
    text += '\n';

    std::lock_guard<std::mutex> lock(mutex_);
    if (printToStdout_.load(std::memory_order_relaxed)) {
      writeAll(STDOUT_FILENO, text);
      return;
    }
    if ((fd_ < 0 || filePid_ != pid) && !openFileLocked(pid)) {
      return;
    }
    if (!writeAll(fd_, text)) {
      const int error = errno;
      ::close(fd_);
      fd_ = -1;
      openFailed_ = true;  // do not retry: one warning, then lines are dropped
      warn("cannot write to the plog file " + filePath_ + ": " + std::generic_category().message(error) + ". Log lines are dropped.");
    }
  } catch (...) {
    // Logging never throws (e.g. std::bad_alloc while formatting).
  }
}

bool Plog::openFileLocked(int pid) {
  if (openFailed_ && filePid_ == pid) {
    return false;  // already warned
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  filePid_ = pid;
  filePath_.clear();
  openFailed_ = true;
  if (rootDirectory_.empty()) {
    warn("no plog directory: HOME is unknown; set ASCEND_PROCESS_LOG_PATH. Log lines are dropped.");
    return false;
  }
  const std::string directory = joinPath(rootDirectory_, "debug/plog");
  try {
    FileDescriptor directoryFd(openPrivateDirectory(directory));
    const LocalTime time = now();
    char name[96];
    std::snprintf(name, sizeof name, "plog-%d_%04d%02d%02d%02d%02d%02d%03ld.log", pid, time.calendar.tm_year + 1900,
                  time.calendar.tm_mon + 1, time.calendar.tm_mday, time.calendar.tm_hour, time.calendar.tm_min,
                  time.calendar.tm_sec, time.microseconds / 1000);
    fd_ = openPrivateFileAt(directoryFd.get(), name, O_WRONLY | O_CREAT | O_APPEND);
    filePath_ = directory + "/" + name;
    openFailed_ = false;
    return true;
  } catch (const RuntimeError& error) {
    warn("cannot create the plog file in " + directory + ": " + error.detail() + " Log lines are dropped.");
  } catch (const std::exception& error) {
    warn("cannot create the plog file in " + directory + ": " + error.what() + " Log lines are dropped.");
  }
  return false;
}

std::string Plog::currentFilePath() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fd_ >= 0 && filePid_ == static_cast<int>(::getpid()) ? filePath_ : std::string();
}

PlogSettings Plog::settings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  PlogSettings result;
  result.level = static_cast<LogLevel>(level_.load(std::memory_order_relaxed));
  result.eventEnabled = eventEnabled_.load(std::memory_order_relaxed);
  result.printToStdout = printToStdout_.load(std::memory_order_relaxed);
  result.rootDirectory = rootDirectory_;
  return result;
}

void Plog::validateConfiguration() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (configurationError_) {
    throw ConfigError(*configurationError_);
  }
}

void Plog::reloadConfigurationForTesting() {
  PlogSettings settings = plogSettingsFromEnvironment();  // throws before anything changes
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  filePid_ = -1;
  filePath_.clear();
  openFailed_ = false;
  configurationError_.reset();
  apply(std::move(settings));
}

// fork() while another thread holds the mutex would leave it locked forever in
// the child; hold it across the fork instead. The child must not append to the
// parent's file: it starts its own on its first line.
void Plog::forkPrepare() { mutex_.lock(); }

void Plog::forkParent() { mutex_.unlock(); }

void Plog::forkChild() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  filePath_.clear();
  filePid_ = -1;
  openFailed_ = false;
  mutex_.unlock();
}

}  // namespace npusim::runtime

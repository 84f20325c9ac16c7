// The plog writer: host application logs with the real CANN stack's locations,
// file names, line format and environment variables (torch_npu contract §5.5, §7).
//
// Where lines go
//   root = ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, else $HOME/ascend/log
//   file = <root>/debug/plog/plog-<pid>_<YYYYMMDDhhmmssmmm>.log (local time of creation)
//   The file is created on the first line written, never before; its directories
//   are created private (mode 0700) and checked as by ensurePrivateDirectory.
//   With ASCEND_SLOG_PRINT_TO_STDOUT=1 lines go to standard output instead.
//   A forked child writes to a new file named after its own pid.
//
// Line format (one write() per line, so threads never interleave within a line)
//   [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [File:Line]TID content
//   e.g. [ERROR] RUNTIME(144,python3):2025-12-23-02:13:21.089.239 [api_impl.cc:7817]144 PeekLastErr: ...
//   LEVEL is DEBUG, INFO, WARNING, ERROR or EVENT; PNAME is the kernel's process
//   name (/proc/self/comm); TID the kernel thread id. Newlines inside content are
//   replaced by spaces so that every record stays one line.
//
// Environment (read once, at first use)
//   ASCEND_GLOBAL_LOG_LEVEL     0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR (default), 4 NULL.
//                               Anything else is a ConfigError whose what() is exactly
//                               "ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4."
//                               (torch_npu's text). Empty counts as unset. npusim is
//                               stricter than torch_npu, whose strtol() reads "abc" as 0.
//   ASCEND_GLOBAL_EVENT_ENABLE  0 / 1 (default 1); EVENT lines are governed by this
//                               switch alone, not by the level. Like CANN, an invalid
//                               value means the default.
//   ASCEND_SLOG_PRINT_TO_STDOUT 0, empty or unset: files; 1: standard output. Anything
//                               else is a ConfigError (CANN silently uses files; npusim
//                               says so instead of ignoring a typo).
//   ASCEND_MODULE_LOG_LEVEL     not implemented (its syntax is unverified).
//
// An invalid variable never makes logging throw: Plog::instance() falls back to
// the default for it and keeps the error, which the runtime raises at
// initialisation through validateConfiguration().
//
// Failure to create the log file (unwritable root, a planted symbolic link, ...)
// never throws from write(): one warning goes to stderr and lines are dropped.
//
// Not implemented: per-file size rotation and the real stack's cap on the number
// of plog files; a long-running process writes one growing file.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace npusim::runtime {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kNull = 4, kEvent = 5 };

// "DEBUG", "INFO", "WARNING", "ERROR", "EVENT" ("NULL" for kNull).
const char* logLevelName(LogLevel level) noexcept;

struct PlogSettings {
  LogLevel level = LogLevel::kError;  // lines at this level or above are written
  bool eventEnabled = true;           // EVENT lines
  bool printToStdout = false;
  std::string rootDirectory;          // the log root; plog files go to <root>/debug/plog
};

// Reads the settings from the environment; throws ConfigError for an invalid
// ASCEND_GLOBAL_LOG_LEVEL or ASCEND_SLOG_PRINT_TO_STDOUT.
PlogSettings plogSettingsFromEnvironment();

class Plog {
 public:
  // The process-wide writer. Never throws and is never destroyed, so that code
  // running during static destruction can still log.
  static Plog& instance();

  // Whether a line at `level` would be written. Lock-free.
  bool enabled(LogLevel level) const noexcept;

  // Writes one line if `level` is enabled. Never throws. `file` is shown as
  // given (NPUSIM_PLOG passes the basename of __FILE__).
  void write(LogLevel level, std::string_view module, std::string_view file, int line,
             std::string_view message) noexcept;

  // Path of the plog file being written, or "" when none has been created yet
  // (or when lines go to stdout).
  std::string currentFilePath() const;

  PlogSettings settings() const;

  // Throws the ConfigError found when the settings were read, if any.
  void validateConfiguration() const;

  // Re-reads the environment and starts a new file on the next line (the
  // current one is closed). Throws ConfigError, leaving the settings unchanged,
  // if the environment is invalid.
  void reloadConfigurationForTesting();

  Plog(const Plog&) = delete;
  Plog& operator=(const Plog&) = delete;

 private:
  Plog();
  void apply(PlogSettings settings);
  bool openFileLocked(int pid);
  void forkPrepare();
  void forkParent();
  void forkChild();

  std::atomic<int> level_{static_cast<int>(LogLevel::kError)};
  std::atomic<bool> eventEnabled_{true};
  std::atomic<bool> printToStdout_{false};

  mutable std::mutex mutex_;
  std::string rootDirectory_;
  std::optional<std::string> configurationError_;
  int fd_ = -1;
  int filePid_ = -1;
  bool openFailed_ = false;
  std::string filePath_;
};

namespace detail {

// The part of `path` after its last '/'.
constexpr std::string_view plogBasename(std::string_view path) noexcept {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace detail

}  // namespace npusim::runtime

// NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "stream " + std::to_string(id) + " failed")
// Evaluates `message` (anything convertible to std::string_view for the
// duration of the statement) only when `level` is enabled.
#define NPUSIM_PLOG(level, module, message)                                                          \
  do {                                                                                               \
    ::npusim::runtime::Plog& npusimPlogWriter_ = ::npusim::runtime::Plog::instance();                \
    if (npusimPlogWriter_.enabled(level)) {                                                          \
      npusimPlogWriter_.write((level), (module), ::npusim::runtime::detail::plogBasename(__FILE__),   \
                              __LINE__, (message));                                                  \
    }                                                                                                \
  } while (false)

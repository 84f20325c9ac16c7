#include "runtime/Plog.h"

#include <gtest/gtest.h>

#include "TestSupport.h"
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/Error.h"

namespace npusim::runtime {
namespace {

using testing::readFile;
using testing::TemporaryDirectory;

const char* const kPlogVariables[] = {"ASCEND_PROCESS_LOG_PATH",   "ASCEND_WORK_PATH",           "HOME",
                                      "ASCEND_GLOBAL_LOG_LEVEL",   "ASCEND_SLOG_PRINT_TO_STDOUT",
                                      "ASCEND_GLOBAL_EVENT_ENABLE"};

// Saves the variables on construction and restores them on destruction.
class SavedEnvironment {
 public:
  SavedEnvironment() {
    for (const char* name : kPlogVariables) {
      const char* value = std::getenv(name);
      saved_.emplace(name, value == nullptr ? std::nullopt : std::optional<std::string>(value));
    }
  }
  ~SavedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    lines.push_back(line);
  }
  return lines;
}

bool exists(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

// [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [File:Line]TID content
const std::regex kLineFormat(
    R"(^\[(DEBUG|INFO|WARNING|ERROR|EVENT)\] ([A-Z]+)\((\d+),([^)]+)\):(\d{4})-(\d{2})-(\d{2})-(\d{2}):(\d{2}):(\d{2})\.(\d{3})\.(\d{3}) \[([^:\]]+):(\d+)\](\d+) (.*)$)");

class PlogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kPlogVariables) {
      ::unsetenv(name);
    }
    ::setenv("ASCEND_PROCESS_LOG_PATH", (temporary_ / "log").c_str(), 1);
    Plog::instance().reloadConfigurationForTesting();
  }
  void TearDown() override {
    restoreEnvironment_.reset();
    try {
      Plog::instance().reloadConfigurationForTesting();
    } catch (const ConfigError&) {
      // The environment the tests started with was invalid; nothing to restore.
    }
  }

  static void reload() { Plog::instance().reloadConfigurationForTesting(); }

  TemporaryDirectory temporary_;
  std::optional<SavedEnvironment> restoreEnvironment_{std::in_place};
};

TEST_F(PlogTest, RootDirectoryPrecedence) {
  ::setenv("ASCEND_PROCESS_LOG_PATH", (temporary_ / "process").c_str(), 1);
  ::setenv("ASCEND_WORK_PATH", (temporary_ / "work").c_str(), 1);
  ::setenv("HOME", (temporary_ / "home").c_str(), 1);
  reload();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "first");
  EXPECT_EQ(Plog::instance().currentFilePath().rfind(temporary_ / "process/debug/plog/plog-", 0), 0u)
      << Plog::instance().currentFilePath();

  ::unsetenv("ASCEND_PROCESS_LOG_PATH");
  reload();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "second");
  EXPECT_EQ(Plog::instance().currentFilePath().rfind(temporary_ / "work/log/debug/plog/plog-", 0), 0u)
      << Plog::instance().currentFilePath();

  ::unsetenv("ASCEND_WORK_PATH");
  reload();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "third");
  EXPECT_EQ(Plog::instance().currentFilePath().rfind(temporary_ / "home/ascend/log/debug/plog/plog-", 0), 0u)
      << Plog::instance().currentFilePath();

  // An empty variable counts as unset.
  ::setenv("ASCEND_PROCESS_LOG_PATH", "", 1);
  ::setenv("ASCEND_WORK_PATH", "", 1);
  reload();
  EXPECT_EQ(Plog::instance().settings().rootDirectory, temporary_ / "home/ascend/log");
}

TEST_F(PlogTest, FileNameFollowsTheRealPattern) {
  const std::time_t before = std::time(nullptr);
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "hello");
  const std::string path = Plog::instance().currentFilePath();
  const std::string name = std::filesystem::path(path).filename();
  std::smatch match;
  ASSERT_TRUE(std::regex_match(name, match, std::regex(R"(^plog-(\d+)_(\d{17})\.log$)"))) << name;
  EXPECT_EQ(match[1].str(), std::to_string(::getpid()));
  // The stamp is local time YYYYMMDDhhmmssmmm; its date is today's (or a
  // second later across midnight).
  char today[16];
  struct tm calendar {};
  ::localtime_r(&before, &calendar);
  std::strftime(today, sizeof today, "%Y%m%d", &calendar);
  const std::time_t after = before + 5;
  char later[16];
  ::localtime_r(&after, &calendar);
  std::strftime(later, sizeof later, "%Y%m%d", &calendar);
  const std::string date = match[2].str().substr(0, 8);
  EXPECT_TRUE(date == today || date == later) << match[2].str();
  EXPECT_EQ(std::filesystem::path(path).parent_path(), temporary_ / "log/debug/plog");
}

TEST_F(PlogTest, LinesFollowTheCannFormat) {
  const int expectedLine = __LINE__ + 1;
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "PeekLastErr: level=0 err=507899.");
  const std::vector<std::string> lines = linesOf(readFile(Plog::instance().currentFilePath()));
  ASSERT_EQ(lines.size(), 1u);
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match, kLineFormat)) << lines[0];
  EXPECT_EQ(match[1].str(), "ERROR");
  EXPECT_EQ(match[2].str(), "RUNTIME");
  EXPECT_EQ(match[3].str(), std::to_string(::getpid()));
  EXPECT_EQ(match[13].str(), "PlogTest.cpp");
  EXPECT_EQ(match[14].str(), std::to_string(expectedLine));
  EXPECT_EQ(match[15].str(), std::to_string(::syscall(SYS_gettid)));
  EXPECT_EQ(match[16].str(), "PeekLastErr: level=0 err=507899.");
  const int month = std::stoi(match[6].str());
  EXPECT_TRUE(month >= 1 && month <= 12);
}

TEST_F(PlogTest, WriteShowsTheFileAsGiven) {
  Plog::instance().write(LogLevel::kError, "ASCENDCL", "stream.cpp", 139,
                         "aclrtSynchronizeStreamImpl:synchronize stream failed, runtime result = 507018");
  const std::string text = readFile(Plog::instance().currentFilePath());
  EXPECT_NE(text.find(" [stream.cpp:139]"), std::string::npos) << text;
  EXPECT_NE(text.find("[ERROR] ASCENDCL("), std::string::npos) << text;
}

TEST_F(PlogTest, NewlinesInContentKeepOneRecordPerLine) {
  NPUSIM_PLOG(LogLevel::kError, "APP", "first line\nsecond line\n");
  const std::vector<std::string> lines = linesOf(readFile(Plog::instance().currentFilePath()));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].ends_with("first line second line")) << lines[0];
}

TEST_F(PlogTest, FileIsCreatedOnTheFirstLineOnly) {
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  NPUSIM_PLOG(LogLevel::kDebug, "RUNTIME", "filtered out at the default level");
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  EXPECT_FALSE(exists(temporary_ / "log")) << "nothing may be created before a line is written";
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "now");
  EXPECT_NE(Plog::instance().currentFilePath(), "");
}

TEST_F(PlogTest, CreatedDirectoriesArePrivate) {
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "x");
  for (const char* relative : {"log", "log/debug", "log/debug/plog"}) {
    struct stat status {};
    ASSERT_EQ(::lstat((temporary_ / relative).c_str(), &status), 0);
    EXPECT_EQ(status.st_mode & 07777, 0700u) << relative;
  }
  struct stat status {};
  ASSERT_EQ(::lstat(Plog::instance().currentFilePath().c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0077, 0u);
}

TEST_F(PlogTest, DefaultLevelIsError) {
  const PlogSettings settings = Plog::instance().settings();
  EXPECT_EQ(settings.level, LogLevel::kError);
  EXPECT_TRUE(settings.eventEnabled);
  EXPECT_FALSE(settings.printToStdout);
  EXPECT_FALSE(Plog::instance().enabled(LogLevel::kWarning));
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kError));
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kEvent));
  EXPECT_FALSE(Plog::instance().enabled(LogLevel::kNull));
}

TEST_F(PlogTest, LevelFiltering) {
  ::setenv("ASCEND_GLOBAL_LOG_LEVEL", "2", 1);
  reload();
  EXPECT_FALSE(Plog::instance().enabled(LogLevel::kDebug));
  EXPECT_FALSE(Plog::instance().enabled(LogLevel::kInfo));
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kWarning));
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kError));
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError, LogLevel::kNull,
                         LogLevel::kEvent}) {
    NPUSIM_PLOG(level, "GE", std::string("at ") + logLevelName(level));
  }
  std::vector<std::string> levels;
  for (const std::string& line : linesOf(readFile(Plog::instance().currentFilePath()))) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, kLineFormat)) << line;
    levels.push_back(match[1].str());
    EXPECT_EQ(match[16].str(), "at " + match[1].str());
  }
  EXPECT_EQ(levels, (std::vector<std::string>{"WARNING", "ERROR", "EVENT"}));

  ::setenv("ASCEND_GLOBAL_LOG_LEVEL", "0", 1);
  reload();
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kDebug));
}

TEST_F(PlogTest, NullLevelAndDisabledEventsWriteNothing) {
  ::setenv("ASCEND_GLOBAL_LOG_LEVEL", "4", 1);
  ::setenv("ASCEND_GLOBAL_EVENT_ENABLE", "0", 1);
  reload();
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError, LogLevel::kNull,
                         LogLevel::kEvent}) {
    EXPECT_FALSE(Plog::instance().enabled(level)) << logLevelName(level);
    NPUSIM_PLOG(level, "RUNTIME", "never");
  }
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  EXPECT_FALSE(exists(temporary_ / "log"));

  // Events are governed by their own switch, not by the level.
  ::setenv("ASCEND_GLOBAL_EVENT_ENABLE", "1", 1);
  reload();
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kEvent));
  // Like CANN, an invalid event switch means the default (enabled).
  ::setenv("ASCEND_GLOBAL_EVENT_ENABLE", "maybe", 1);
  reload();
  EXPECT_TRUE(Plog::instance().enabled(LogLevel::kEvent));
}

TEST_F(PlogTest, MacroDoesNotEvaluateTheMessageWhenDisabled) {
  int evaluations = 0;
  auto message = [&] {
    ++evaluations;
    return std::string("counted");
  };
  NPUSIM_PLOG(LogLevel::kDebug, "RUNTIME", message());
  EXPECT_EQ(evaluations, 0);
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", message());
  EXPECT_EQ(evaluations, 1);
}

TEST_F(PlogTest, InvalidLogLevelIsRejectedWithTheTorchNpuText) {
  ::setenv("ASCEND_GLOBAL_LOG_LEVEL", "1", 1);
  reload();
  for (const char* value : {"5", "-1", "abc", "3x", "10", "0.5"}) {
    ::setenv("ASCEND_GLOBAL_LOG_LEVEL", value, 1);
    try {
      reload();
      ADD_FAILURE() << "accepted ASCEND_GLOBAL_LOG_LEVEL=" << value;
    } catch (const ConfigError& error) {
      EXPECT_STREQ(error.what(), "ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4.");
    }
    EXPECT_THROW(plogSettingsFromEnvironment(), ConfigError);
    EXPECT_EQ(Plog::instance().settings().level, LogLevel::kInfo) << "a rejected reload changes nothing";
  }
  ::setenv("ASCEND_GLOBAL_LOG_LEVEL", "", 1);  // empty means unset
  reload();
  EXPECT_EQ(Plog::instance().settings().level, LogLevel::kError);
  EXPECT_NO_THROW(Plog::instance().validateConfiguration());
}

TEST_F(PlogTest, StdoutMode) {
  ::setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1", 1);
  reload();
  ::testing::internal::CaptureStdout();
  NPUSIM_PLOG(LogLevel::kError, "HCCL", "to the screen");
  const std::string output = ::testing::internal::GetCapturedStdout();
  const std::vector<std::string> lines = linesOf(output);
  ASSERT_EQ(lines.size(), 1u) << output;
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match, kLineFormat)) << lines[0];
  EXPECT_EQ(match[2].str(), "HCCL");
  EXPECT_EQ(match[16].str(), "to the screen");
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  EXPECT_FALSE(exists(temporary_ / "log"));

  ::setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "0", 1);
  reload();
  EXPECT_FALSE(Plog::instance().settings().printToStdout);
}

TEST_F(PlogTest, InvalidStdoutSettingIsRejected) {
  for (const char* value : {"2", "yes", "true", "01"}) {
    ::setenv("ASCEND_SLOG_PRINT_TO_STDOUT", value, 1);
    try {
      reload();
      ADD_FAILURE() << "accepted ASCEND_SLOG_PRINT_TO_STDOUT=" << value;
    } catch (const ConfigError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("ASCEND_SLOG_PRINT_TO_STDOUT should be 0"), std::string::npos) << text;
      EXPECT_NE(text.find(std::string("'") + value + "'"), std::string::npos) << text;
    }
  }
}

TEST_F(PlogTest, UnwritableRootDoesNotCrashAndWarnsOnce) {
  {
    std::ofstream blocker(temporary_ / "not-a-directory");
    blocker << "x";
  }
  ::setenv("ASCEND_PROCESS_LOG_PATH", (temporary_ / "not-a-directory/log").c_str(), 1);
  reload();
  ::testing::internal::CaptureStderr();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "dropped 1");
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "dropped 2");
  Plog::instance().write(LogLevel::kError, "RUNTIME", "x.cpp", 1, "dropped 3");
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(linesOf(errors).size(), 1u) << errors;
  EXPECT_NE(errors.find("not a directory"), std::string::npos) << errors;
  EXPECT_NE(errors.find("dropped"), std::string::npos) << errors;
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
}

TEST_F(PlogTest, UnwritableRootWithoutPermission) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root can write anywhere";
  }
  ASSERT_EQ(::mkdir((temporary_ / "readonly").c_str(), 0500), 0);
  ::setenv("ASCEND_PROCESS_LOG_PATH", (temporary_ / "readonly/log").c_str(), 1);
  reload();
  ::testing::internal::CaptureStderr();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "dropped");
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(linesOf(errors).size(), 1u) << errors;
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  ::chmod((temporary_ / "readonly").c_str(), 0700);
}

TEST_F(PlogTest, PlantedSymlinkIsRefused) {
  ASSERT_EQ(::mkdir((temporary_ / "log").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((temporary_ / "log/debug").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((temporary_ / "elsewhere").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((temporary_ / "elsewhere").c_str(), (temporary_ / "log/debug/plog").c_str()), 0);
  ::testing::internal::CaptureStderr();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "must not reach the link target");
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("symbolic link"), std::string::npos) << errors;
  EXPECT_EQ(Plog::instance().currentFilePath(), "");
  EXPECT_TRUE(std::filesystem::is_empty(temporary_ / "elsewhere"));
}

TEST_F(PlogTest, PlantedSymlinkAsTheLogFileIsNotFollowed) {
  // A link planted at the exact file name cannot be predicted in practice (the
  // name holds the pid and the millisecond), but even then it is refused.
  ASSERT_NO_THROW(NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "create the directories"));
  const std::string directory = temporary_ / "log/debug/plog";
  reload();
  {
    std::ofstream precious(temporary_ / "precious");
    precious << "keep";
  }
  // Plant links for every millisecond of the next few seconds.
  const std::string prefix = "plog-" + std::to_string(::getpid()) + "_";
  struct timespec spec {};
  ::clock_gettime(CLOCK_REALTIME, &spec);
  std::vector<std::string> planted;
  for (int offset = 0; offset < 3000; ++offset) {
    const long long millisecondsTotal = static_cast<long long>(spec.tv_sec) * 1000 + spec.tv_nsec / 1000000 + offset;
    const std::time_t seconds = static_cast<std::time_t>(millisecondsTotal / 1000);
    struct tm calendar {};
    ::localtime_r(&seconds, &calendar);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &calendar);
    char milliseconds[8];
    std::snprintf(milliseconds, sizeof milliseconds, "%03lld", millisecondsTotal % 1000);
    const std::string link = directory + "/" + prefix + stamp + milliseconds + ".log";
    if (::symlink((temporary_ / "precious").c_str(), link.c_str()) == 0) {
      planted.push_back(link);
    }
  }
  ::testing::internal::CaptureStderr();
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "must not reach the link target");
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(readFile(temporary_ / "precious"), "keep");
  EXPECT_NE(errors.find("symbolic link"), std::string::npos) << errors;
  for (const std::string& link : planted) {
    ::unlink(link.c_str());
  }
}

TEST_F(PlogTest, ForkedChildWritesItsOwnFile) {
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "parent before fork");
  const std::string parentFile = Plog::instance().currentFilePath();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "child");
    const std::string childFile = Plog::instance().currentFilePath();
    const bool ownFile = !childFile.empty() && childFile != parentFile &&
                         childFile.find("plog-" + std::to_string(::getpid()) + "_") != std::string::npos;
    ::_exit(ownFile ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "parent after fork");
  EXPECT_EQ(Plog::instance().currentFilePath(), parentFile);
  const std::string parentText = readFile(parentFile);
  EXPECT_EQ(parentText.find(" child"), std::string::npos) << parentText;
  EXPECT_EQ(linesOf(parentText).size(), 2u);
}

class PlogConcurrency : public PlogTest {};

TEST_F(PlogConcurrency, ThreadsNeverInterleaveWithinALine) {
  constexpr int kThreads = 8;
  constexpr int kLinesPerThread = 400;
  const std::string padding(200, 'x');
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([thread, &padding] {
      for (int index = 0; index < kLinesPerThread; ++index) {
        NPUSIM_PLOG(LogLevel::kError, "RUNTIME",
                    "thread=" + std::to_string(thread) + " index=" + std::to_string(index) + " " + padding);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const std::vector<std::string> lines = linesOf(readFile(Plog::instance().currentFilePath()));
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kLinesPerThread));
  std::set<std::pair<int, int>> seen;
  std::map<int, int> lastIndex;
  const std::regex content(R"(^thread=(\d+) index=(\d+) x{200}$)");
  for (const std::string& line : lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, kLineFormat)) << line;
    const std::string message = match[16].str();
    std::smatch parts;
    ASSERT_TRUE(std::regex_match(message, parts, content)) << line;
    const int thread = std::stoi(parts[1].str());
    const int index = std::stoi(parts[2].str());
    EXPECT_TRUE(seen.emplace(thread, index).second) << "duplicate " << line;
    // Lines of one thread keep their order.
    auto previous = lastIndex.find(thread);
    if (previous != lastIndex.end()) {
      EXPECT_LT(previous->second, index);
    }
    lastIndex[thread] = index;
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kLinesPerThread));
}

TEST_F(PlogConcurrency, ReloadWhileWritingIsSafe) {
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::vector<std::thread> writers;
  for (int thread = 0; thread < 3; ++thread) {
    writers.emplace_back([&stop, &written] {
      while (!stop.load()) {
        NPUSIM_PLOG(LogLevel::kError, "RUNTIME", "while reloading");
        (void)Plog::instance().currentFilePath();
        written.fetch_add(1);
      }
    });
  }
  for (int reloads = 0; reloads < 20; ++reloads) {
    const int before = written.load();
    while (written.load() < before + 5) {
      std::this_thread::yield();
    }
    reload();
  }
  stop.store(true);
  for (std::thread& writer : writers) {
    writer.join();
  }
  for (const auto& entry : std::filesystem::directory_iterator(temporary_ / "log/debug/plog")) {
    for (const std::string& line : linesOf(readFile(entry.path()))) {
      EXPECT_TRUE(std::regex_match(line, kLineFormat)) << line;
    }
  }
}

}  // namespace
}  // namespace npusim::runtime

#include "runtime/StatusRegistry.h"

#include <gtest/gtest.h>

#include "TestSupport.h"
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/Error.h"
#include "runtime/PrivateFiles.h"

namespace npusim::runtime {
namespace {

using testing::readFile;
using testing::TemporaryDirectory;

const char* const kStatusVariables[] = {"NPUSIM_RUNTIME_DIR", "XDG_RUNTIME_DIR"};

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream << content;
}

bool exists(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

ProcessStatus sampleStatus() {
  return ProcessStatus{0, "trainer main", "Ascend910B2", 1750000000123ull,
                       {DeviceUsage{0, 1048576, 2097152, 123456789}, DeviceUsage{3, 0, 0, 0}}};
}

// A status file, as a live process `pid` would publish it.
std::string statusFileFor(int pid, const std::string& name) {
  ProcessStatus status{pid, name, "Ascend910B2", 1750000000000ull, {DeviceUsage{1, 10, 20, 30}}};
  return formatStatusFile(status, processStartTicks(pid).value_or(0));
}

// A child process of the same user that stays alive until destroyed.
class LiveChild {
 public:
  LiveChild() {
    int fds[2];
    if (::pipe(fds) != 0) {
      throw std::runtime_error("pipe failed");
    }
    pid_ = ::fork();
    if (pid_ < 0) {
      throw std::runtime_error("fork failed");
    }
    if (pid_ == 0) {
      ::close(fds[1]);
      char ignored;
      (void)!::read(fds[0], &ignored, 1);  // returns when the parent closes its end
      ::_exit(0);
    }
    ::close(fds[0]);
    release_ = fds[1];
  }
  ~LiveChild() {
    ::close(release_);
    ::waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int release_ = -1;
};

std::vector<int> pidsOf(const std::vector<ProcessStatus>& statuses) {
  std::vector<int> pids;
  for (const ProcessStatus& status : statuses) {
    pids.push_back(status.pid);
  }
  return pids;
}

class StatusRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kStatusVariables) {
      const char* value = std::getenv(name);
      saved_.emplace(name, value == nullptr ? std::nullopt : std::optional<std::string>(value));
      ::unsetenv(name);
    }
    directory_ = temporary_ / "run";
    ::setenv("NPUSIM_RUNTIME_DIR", directory_.c_str(), 1);
    StatusPublisher::instance().withdraw();
  }
  void TearDown() override {
    StatusPublisher::instance().withdraw();
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

  std::string ownFile() const { return directory_ + "/" + std::to_string(::getpid()) + ".status"; }

  TemporaryDirectory temporary_;
  std::string directory_;
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(StatusRegistryTest, DirectoryPrecedence) {
  ::setenv("NPUSIM_RUNTIME_DIR", "/somewhere/explicit", 1);
  ::setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
  EXPECT_EQ(statusDirectory(), "/somewhere/explicit");
  ::unsetenv("NPUSIM_RUNTIME_DIR");
  EXPECT_EQ(statusDirectory(), "/run/user/1000/npusim");
  ::setenv("XDG_RUNTIME_DIR", "/run/user/1000/", 1);
  EXPECT_EQ(statusDirectory(), "/run/user/1000/npusim");
  ::setenv("XDG_RUNTIME_DIR", "", 1);
  EXPECT_EQ(statusDirectory(), "/tmp/npusim-" + std::to_string(::geteuid()));
  ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(statusDirectory(), "/tmp/npusim-" + std::to_string(::geteuid()));
}

TEST_F(StatusRegistryTest, FormatAndParseRoundTrip) {
  ProcessStatus status = sampleStatus();
  status.pid = 4242;
  status.processName = "odd\nname=with\tcontrols";
  status.devices[0].simulatedNs = 300000000;
  const std::string text = formatStatusFile(status, 987654);
  EXPECT_NE(text.find("\nformat=1\n"), std::string::npos);
  EXPECT_NE(text.find("\ndevice=0 memory_bytes=1048576 reserved_bytes=2097152 busy_ns=123456789 simulated_ns=300000000\n"),
            std::string::npos)
      << text;
  const std::optional<ParsedStatusFile> parsed = parseStatusFile(text);
  ASSERT_TRUE(parsed.has_value()) << text;
  EXPECT_EQ(parsed->processStartTicks, 987654u);
  EXPECT_EQ(parsed->status.pid, 4242);
  EXPECT_EQ(parsed->status.processName, "odd?name=with?controls");
  EXPECT_EQ(parsed->status.socName, "Ascend910B2");
  EXPECT_EQ(parsed->status.updatedUnixMs, 1750000000123ull);
  ASSERT_EQ(parsed->status.devices.size(), 2u);
  EXPECT_EQ(parsed->status.devices[0].physicalDevice, 0);
  EXPECT_EQ(parsed->status.devices[0].memoryBytes, 1048576u);
  EXPECT_EQ(parsed->status.devices[0].reservedBytes, 2097152u);
  EXPECT_EQ(parsed->status.devices[0].busyNs, 123456789u);
  EXPECT_EQ(parsed->status.devices[0].simulatedNs, 300000000u);
  EXPECT_EQ(parsed->status.devices[1].physicalDevice, 3);
  EXPECT_EQ(parsed->status.devices[1].simulatedNs, 0u);
}

TEST_F(StatusRegistryTest, ParserIgnoresUnknownFieldsAndComments) {
  const std::string text =
      "# comment\n\nformat=1\npid=7\nupdated_unix_ms=5\nfuture_key=anything\n"
      "device=2 memory_bytes=1 reserved_bytes=2 busy_ns=3 aicore_percent=40\n";
  const std::optional<ParsedStatusFile> parsed = parseStatusFile(text);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->status.pid, 7);
  EXPECT_EQ(parsed->status.processName, "");
  EXPECT_EQ(parsed->processStartTicks, 0u);
  ASSERT_EQ(parsed->status.devices.size(), 1u);
  EXPECT_EQ(parsed->status.devices[0].busyNs, 3u);
  EXPECT_EQ(parsed->status.devices[0].simulatedNs, 0u);  // optional: older writers omit it
}

TEST_F(StatusRegistryTest, ParserRejectsMalformedFiles) {
  const std::string valid = "format=1\npid=7\nupdated_unix_ms=5\ndevice=0 memory_bytes=1 reserved_bytes=2 busy_ns=3\n";
  ASSERT_TRUE(parseStatusFile(valid).has_value());
  const char* const malformed[] = {
      "",
      "garbage",
      "format=1\npid=7\nupdated_unix_ms=5",                         // cut short: no final newline
      "format=2\npid=7\nupdated_unix_ms=5\n",                        // unknown format
      "pid=7\nupdated_unix_ms=5\n",                                  // no format
      "format=1\nupdated_unix_ms=5\n",                               // no pid
      "format=1\npid=7\n",                                           // no update time
      "format=1\npid=-7\nupdated_unix_ms=5\n",                       // negative pid
      "format=1\npid=0\nupdated_unix_ms=5\n",                        // pid 0
      "format=1\npid=7x\nupdated_unix_ms=5\n",                       // trailing junk
      "format=1\npid=99999999999\nupdated_unix_ms=5\n",              // out of range
      "format=1\npid=7\nupdated_unix_ms=+5\n",                       // sign
      "format=1\npid=7\nupdated_unix_ms=5\nno equals sign\n",        // not key=value
      "format=1\npid=7\nupdated_unix_ms=5\ndevice=0 memory_bytes=1\n",  // incomplete device
      "format=1\npid=7\nupdated_unix_ms=5\ndevice=0 memory_bytes=1 reserved_bytes=2 busy_ns=x\n",
      "format=1\npid=7\nupdated_unix_ms=5\ndevice=0 memory_bytes=1 reserved_bytes=2 busy_ns=3 junk\n",
      "format=1\npid=7\nupdated_unix_ms=5\ndevice=0 memory_bytes=1 reserved_bytes=2 busy_ns=3 simulated_ns=-1\n",
  };
  for (const char* text : malformed) {
    EXPECT_FALSE(parseStatusFile(text).has_value()) << "accepted: " << text;
  }
}

TEST_F(StatusRegistryTest, PublishAndReadRoundTrip) {
  ASSERT_TRUE(StatusPublisher::instance().publish(sampleStatus(), true));
  ASSERT_TRUE(exists(ownFile()));
  const std::vector<ProcessStatus> statuses = readLiveStatuses(directory_);
  ASSERT_EQ(statuses.size(), 1u);
  const ProcessStatus& status = statuses[0];
  EXPECT_EQ(status.pid, ::getpid()) << "the file always describes the calling process";
  EXPECT_EQ(status.processName, "trainer main");
  EXPECT_EQ(status.socName, "Ascend910B2");
  EXPECT_EQ(status.updatedUnixMs, 1750000000123ull);
  ASSERT_EQ(status.devices.size(), 2u);
  EXPECT_EQ(status.devices[0].memoryBytes, 1048576u);
  EXPECT_EQ(status.devices[0].reservedBytes, 2097152u);
  EXPECT_EQ(status.devices[0].busyNs, 123456789u);
  EXPECT_EQ(status.devices[1].physicalDevice, 3);
  // The default directory argument is statusDirectory().
  EXPECT_EQ(readLiveStatuses().size(), 1u);

  const std::optional<ParsedStatusFile> parsed = parseStatusFile(readFile(ownFile()));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->processStartTicks, processStartTicks(::getpid()).value_or(0));
}

TEST_F(StatusRegistryTest, PublishFillsNameAndTime) {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ASSERT_TRUE(StatusPublisher::instance().publish(ProcessStatus{12345, "", "Ascend910B4", 0, {}}, true));
  const std::vector<ProcessStatus> statuses = readLiveStatuses(directory_);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].pid, ::getpid());
  EXPECT_FALSE(statuses[0].processName.empty());
  EXPECT_GE(statuses[0].updatedUnixMs, static_cast<uint64_t>(before));
  EXPECT_TRUE(statuses[0].devices.empty());
}

TEST_F(StatusRegistryTest, DirectoryAndFileArePrivate) {
  ASSERT_TRUE(StatusPublisher::instance().publish(sampleStatus(), true));
  struct stat status {};
  ASSERT_EQ(::lstat(directory_.c_str(), &status), 0);
  EXPECT_TRUE(S_ISDIR(status.st_mode));
  EXPECT_EQ(status.st_mode & 07777, 0700u);
  EXPECT_EQ(status.st_uid, ::geteuid());
  ASSERT_EQ(::lstat(ownFile().c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 07777, 0600u);
}

TEST_F(StatusRegistryTest, PublishIsThrottledUnlessForced) {
  ProcessStatus status = sampleStatus();
  status.devices[0].memoryBytes = 1;
  ASSERT_TRUE(StatusPublisher::instance().publish(status));  // first write is immediate
  status.devices[0].memoryBytes = 2;
  EXPECT_FALSE(StatusPublisher::instance().publish(status));  // within 200 ms: kept
  EXPECT_EQ(readLiveStatuses(directory_).at(0).devices[0].memoryBytes, 1u);
  EXPECT_TRUE(StatusPublisher::instance().flush());
  EXPECT_EQ(readLiveStatuses(directory_).at(0).devices[0].memoryBytes, 2u);
  EXPECT_FALSE(StatusPublisher::instance().flush()) << "nothing left to flush";

  status.devices[0].memoryBytes = 3;
  EXPECT_TRUE(StatusPublisher::instance().publish(status, true));
  EXPECT_EQ(readLiveStatuses(directory_).at(0).devices[0].memoryBytes, 3u);

  status.devices[0].memoryBytes = 4;
  EXPECT_FALSE(StatusPublisher::instance().publish(status));
  std::this_thread::sleep_for(StatusPublisher::kMinimumInterval + std::chrono::milliseconds(20));
  status.devices[0].memoryBytes = 5;
  EXPECT_TRUE(StatusPublisher::instance().publish(status));
  EXPECT_EQ(readLiveStatuses(directory_).at(0).devices[0].memoryBytes, 5u);
  EXPECT_FALSE(StatusPublisher::instance().flush()) << "a write supersedes the kept status";
}

TEST_F(StatusRegistryTest, WithdrawRemovesTheFile) {
  ASSERT_TRUE(StatusPublisher::instance().publish(sampleStatus(), true));
  ASSERT_TRUE(exists(ownFile()));
  StatusPublisher::instance().withdraw();
  EXPECT_FALSE(exists(ownFile()));
  EXPECT_TRUE(readLiveStatuses(directory_).empty());
  StatusPublisher::instance().withdraw();  // harmless when nothing is published
  // After a withdraw the next publish is not throttled.
  EXPECT_TRUE(StatusPublisher::instance().publish(sampleStatus()));
  EXPECT_TRUE(exists(ownFile()));
}

TEST_F(StatusRegistryTest, FileIsRemovedAtNormalExit) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool published = StatusPublisher::instance().publish(sampleStatus(), true);
    std::exit(published ? 0 : 1);  // runs the atexit handler
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(exists(directory_ + "/" + std::to_string(child) + ".status"));
}

TEST_F(StatusRegistryTest, ForkedChildDoesNotRemoveItsParentsFile) {
  ASSERT_TRUE(StatusPublisher::instance().publish(sampleStatus(), true));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StatusPublisher::instance().withdraw();
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(exists(ownFile()));
}

TEST_F(StatusRegistryTest, DeadProcessIsIgnored) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool published = StatusPublisher::instance().publish(sampleStatus(), true);
    ::_exit(published ? 0 : 1);  // no atexit handlers: the file stays, as after a crash
  }
  const std::string childFile = directory_ + "/" + std::to_string(child) + ".status";

  // Exited but not yet reaped (a zombie): already not live.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_status, 0);
  ASSERT_TRUE(exists(childFile));
  EXPECT_TRUE(readLiveStatuses(directory_).empty());
  // The reader removed the dead process's file.
  EXPECT_FALSE(exists(childFile));

  // Reaped: kill(pid, 0) fails with ESRCH.
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(readLiveStatuses(directory_).empty());

  // A live process next to it is still listed.
  ASSERT_TRUE(StatusPublisher::instance().publish(sampleStatus(), true));
  EXPECT_EQ(pidsOf(readLiveStatuses(directory_)), std::vector<int>{::getpid()});
}

TEST_F(StatusRegistryTest, ReusedPidIsIgnored) {
  ensurePrivateDirectory(directory_);
  const int pid = ::getpid();
  const std::optional<uint64_t> ticks = processStartTicks(pid);
  if (!ticks) {
    GTEST_SKIP() << "no /proc";
  }
  ProcessStatus status{pid, "earlier process", "Ascend910B2", 1, {}};
  writeFile(directory_ + "/" + std::to_string(pid) + ".status", formatStatusFile(status, *ticks + 1));
  EXPECT_TRUE(readLiveStatuses(directory_).empty()) << "same pid, different start time: a reused pid";
  writeFile(directory_ + "/" + std::to_string(pid) + ".status", formatStatusFile(status, *ticks));
  EXPECT_EQ(readLiveStatuses(directory_).size(), 1u);
  writeFile(directory_ + "/" + std::to_string(pid) + ".status", formatStatusFile(status, 0));
  EXPECT_EQ(readLiveStatuses(directory_).size(), 1u) << "an unknown start time trusts kill()";
}

TEST_F(StatusRegistryTest, MalformedAndMisnamedFilesAreSkipped) {
  ensurePrivateDirectory(directory_);
  const int self = ::getpid();
  const LiveChild child;
  const int live = child.pid();
  writeFile(directory_ + "/" + std::to_string(live) + ".status", statusFileFor(live, "valid"));
  writeFile(directory_ + "/" + std::to_string(self) + ".status", "format=1\npid=garbage\n");
  writeFile(directory_ + "/1.status", statusFileFor(live, "pid differs from the name"));
  writeFile(directory_ + "/notes.txt", statusFileFor(live, "not a status file name"));
  writeFile(directory_ + "/." + std::to_string(live) + ".status.tmp-1-2", statusFileFor(live, "temporary"));
  writeFile(directory_ + "/abc.status", statusFileFor(live, "not a pid"));
  writeFile(directory_ + "/" + std::to_string(self) + "0.status", std::string(2 << 20, 'x'));  // too large
  ASSERT_EQ(::mkdir((directory_ + "/2.status").c_str(), 0700), 0);
  const std::vector<ProcessStatus> statuses = readLiveStatuses(directory_);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].pid, live);
  EXPECT_EQ(statuses[0].processName, "valid");
}

TEST_F(StatusRegistryTest, SymlinkIsSkipped) {
  ensurePrivateDirectory(directory_);
  const LiveChild child;
  const int live = child.pid();
  writeFile(temporary_ / "elsewhere.status", statusFileFor(live, "through a link"));
  const std::string link = directory_ + "/" + std::to_string(live) + ".status";
  ASSERT_EQ(::symlink((temporary_ / "elsewhere.status").c_str(), link.c_str()), 0);
  ASSERT_EQ(::mkfifo((directory_ + "/" + std::to_string(::getpid()) + ".status").c_str(), 0600), 0);
  EXPECT_TRUE(readLiveStatuses(directory_).empty());
}

TEST_F(StatusRegistryTest, AnotherUsersFileIsSkipped) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file to another user";
  }
  ensurePrivateDirectory(directory_);
  const LiveChild child;
  const int live = child.pid();
  const std::string path = directory_ + "/" + std::to_string(live) + ".status";
  writeFile(path, statusFileFor(live, "foreign"));
  ASSERT_EQ(::chown(path.c_str(), 54321, 54321), 0);
  EXPECT_TRUE(readLiveStatuses(directory_).empty());
}

TEST_F(StatusRegistryTest, MissingDirectoryGivesAnEmptyList) {
  EXPECT_TRUE(readLiveStatuses(temporary_ / "never/created").empty());
  EXPECT_FALSE(exists(temporary_ / "never"));
}

TEST_F(StatusRegistryTest, UnsafeDirectoryIsRefused) {
  ASSERT_EQ(::mkdir(directory_.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(directory_.c_str(), 0777), 0);
  try {
    readLiveStatuses(directory_);
    ADD_FAILURE() << "read a group/other-writable directory";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtNoPermission);
  }
  // Publishing there fails without throwing, with one warning.
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(StatusPublisher::instance().publish(sampleStatus(), true));
  EXPECT_FALSE(StatusPublisher::instance().publish(sampleStatus(), true));
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(exists(ownFile()));
  EXPECT_NE(errors.find("writable by group or others"), std::string::npos) << errors;

  // A symbolic link as the directory is refused too.
  ASSERT_EQ(::chmod(directory_.c_str(), 0700), 0);
  const std::string link = temporary_ / "link";
  ASSERT_EQ(::symlink(directory_.c_str(), link.c_str()), 0);
  EXPECT_THROW(readLiveStatuses(link), RuntimeError);
  ::setenv("NPUSIM_RUNTIME_DIR", link.c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(StatusPublisher::instance().publish(sampleStatus(), true));
  ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(exists(ownFile()));
}

TEST_F(StatusRegistryTest, ShowsEveryLiveProcess) {
  constexpr int kChildren = 3;
  int release[2];
  int ready[2];
  ASSERT_EQ(::pipe(release), 0);
  ASSERT_EQ(::pipe(ready), 0);
  std::vector<pid_t> children;
  for (int index = 0; index < kChildren; ++index) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(release[1]);
      ::close(ready[0]);
      ProcessStatus status{0, "worker " + std::to_string(index), "Ascend910B2", 0,
                           {DeviceUsage{index, static_cast<uint64_t>(index) * 100, 0, 0}}};
      const char result = StatusPublisher::instance().publish(status, true) ? 'y' : 'n';
      (void)!::write(ready[1], &result, 1);
      char ignored;
      (void)!::read(release[0], &ignored, 1);  // wait until the parent has looked
      ::_exit(0);
    }
    children.push_back(child);
  }
  ::close(release[0]);
  ::close(ready[1]);
  for (int index = 0; index < kChildren; ++index) {
    char result = 0;
    ASSERT_EQ(::read(ready[0], &result, 1), 1);
    EXPECT_EQ(result, 'y');
  }
  const std::vector<ProcessStatus> statuses = readLiveStatuses(directory_);
  ::close(release[1]);  // lets the children exit
  for (pid_t child : children) {
    ::waitpid(child, nullptr, 0);
  }
  ASSERT_EQ(statuses.size(), static_cast<std::size_t>(kChildren));
  std::vector<int> expected(children.begin(), children.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(pidsOf(statuses), expected);
  for (const ProcessStatus& status : statuses) {
    ASSERT_EQ(status.devices.size(), 1u);
    EXPECT_EQ(status.processName, "worker " + std::to_string(status.devices[0].physicalDevice));
  }
  EXPECT_TRUE(readLiveStatuses(directory_).empty()) << "all children have exited";
  ::close(ready[0]);
}

class StatusConcurrency : public StatusRegistryTest {};

// Several threads publish while others read: a reader always sees one whole,
// consistent file (memory, reserved and busy values of the same publish).
TEST_F(StatusConcurrency, ReadersNeverSeeAPartialFile) {
  constexpr int kPublishers = 4;
  constexpr int kPublishesEach = 150;
  std::atomic<int> publishersDone{0};
  std::atomic<int> reads{0};
  std::atomic<int> inconsistent{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kPublishers; ++thread) {
    threads.emplace_back([thread, &publishersDone] {
      for (int index = 0; index < kPublishesEach; ++index) {
        const uint64_t value = static_cast<uint64_t>(thread) * 100000 + static_cast<uint64_t>(index);
        ProcessStatus status{0, "concurrent", "Ascend910B2", 0,
                             {DeviceUsage{0, value, 2 * value, value + 7}, DeviceUsage{1, value, value, value}}};
        // Mix forced and throttled publishes.
        StatusPublisher::instance().publish(status, index % 2 == 0);
      }
      publishersDone.fetch_add(1);
    });
  }
  for (int reader = 0; reader < 2; ++reader) {
    threads.emplace_back([&] {
      while (publishersDone.load() < kPublishers) {
        for (const ProcessStatus& status : readLiveStatuses(directory_)) {
          reads.fetch_add(1);
          const bool consistent = status.devices.size() == 2 &&
                                  status.devices[0].reservedBytes == 2 * status.devices[0].memoryBytes &&
                                  status.devices[0].busyNs == status.devices[0].memoryBytes + 7 &&
                                  status.devices[1].memoryBytes == status.devices[0].memoryBytes;
          if (!consistent) {
            inconsistent.fetch_add(1);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  StatusPublisher::instance().flush();
  EXPECT_EQ(inconsistent.load(), 0);
  const std::vector<ProcessStatus> statuses = readLiveStatuses(directory_);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].devices.size(), 2u);
  // No temporary files are left behind.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  ::testing::Test::RecordProperty("reads", reads.load());
}

TEST_F(StatusConcurrency, WithdrawRacesWithPublish) {
  std::atomic<bool> stop{false};
  std::thread publisher([&stop] {
    while (!stop.load()) {
      StatusPublisher::instance().publish(sampleStatus(), true);
    }
  });
  for (int round = 0; round < 50; ++round) {
    StatusPublisher::instance().withdraw();
    for (const ProcessStatus& status : readLiveStatuses(directory_)) {
      EXPECT_EQ(status.devices.size(), 2u);
    }
  }
  stop.store(true);
  publisher.join();
  StatusPublisher::instance().withdraw();
  EXPECT_FALSE(exists(ownFile()));
}


TEST_F(StatusRegistryTest, SigtermRemovesTheFileAndStillTerminates) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!StatusPublisher::instance().publish(sampleStatus(), true)) ::_exit(1);
    ::raise(SIGTERM);
    ::_exit(2);  // not reached: the default action of SIGTERM ends the child
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(exists(directory_ + "/" + std::to_string(child) + ".status"));
}

TEST_F(StatusRegistryTest, SigintChainsToThePreviousHandler) {
  // The child must install its handler before the publisher's, as Python does.
  // It inherits this process's dispositions: if an earlier test of this binary
  // already made the publisher install its handler here, that order cannot be
  // set up (CTest runs each test in a fresh process, where it can).
  struct sigaction current {};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &current), 0);
  if ((current.sa_flags & SA_SIGINFO) != 0) {
    GTEST_SKIP() << "the publisher's SIGINT handler is already installed in this process";
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    static volatile sig_atomic_t previousRan = 0;
    // Installed before the publisher's handler, as Python's is.
    ::signal(SIGINT, [](int) { previousRan = 1; });
    // A fresh child process: the publisher installs its handlers on its first write.
    if (!StatusPublisher::instance().publish(sampleStatus(), true)) ::_exit(1);
    ::raise(SIGINT);
    ::_exit(previousRan ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(exists(directory_ + "/" + std::to_string(child) + ".status"));
}

}  // namespace
}  // namespace npusim::runtime

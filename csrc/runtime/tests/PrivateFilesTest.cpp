#include "runtime/PrivateFiles.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/Error.h"

namespace npusim::runtime {
namespace {

using testing::readFile;
using testing::TemporaryDirectory;

mode_t modeOf(const std::string& path) {
  struct stat status {};
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status.st_mode & 07777;
}

bool isDirectory(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

bool exists(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream << content;
}

// Runs `action`, expecting a kRtNoPermission refusal whose detail contains `reason`.
template <typename Action>
void expectRefusal(Action action, const std::string& reason) {
  try {
    action();
    ADD_FAILURE() << "expected a refusal mentioning '" << reason << "'";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtNoPermission) << error.what();
    EXPECT_NE(error.detail().find(reason), std::string::npos) << error.detail();
  }
}

constexpr uid_t kOtherUser = 54321;

bool runningAsRoot() { return ::geteuid() == 0; }

TEST(PrivateFilesTest, CreatesMissingComponentsWithExactly0700) {
  TemporaryDirectory temporary;
  ::chmod(temporary.path().c_str(), 0755);
  const mode_t previous = ::umask(0277);  // would give 0500 without the explicit chmod
  ensurePrivateDirectory(temporary / "a/b/c");
  ::umask(previous);
  EXPECT_EQ(modeOf(temporary / "a"), 0700u);
  EXPECT_EQ(modeOf(temporary / "a/b"), 0700u);
  EXPECT_EQ(modeOf(temporary / "a/b/c"), 0700u);
  EXPECT_EQ(modeOf(temporary.path()), 0755u) << "an existing component must not be changed";
}

TEST(PrivateFilesTest, AcceptsAnExistingDirectoryClosedToOtherWriters) {
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkdir((temporary / "shared").c_str(), 0755), 0);
  ::chmod((temporary / "shared").c_str(), 0755);
  EXPECT_NO_THROW(ensurePrivateDirectory(temporary / "shared"));
  EXPECT_EQ(modeOf(temporary / "shared"), 0755u);
  EXPECT_NO_THROW(ensurePrivateDirectory(temporary / "shared/"));  // trailing slash
  EXPECT_NO_THROW(ensurePrivateDirectory(temporary.path() + "//shared/./"));
}

TEST(PrivateFilesTest, RefusesASymbolicLinkAsTheFinalDirectory) {
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkdir((temporary / "real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((temporary / "real").c_str(), (temporary / "link").c_str()), 0);
  expectRefusal([&] { ensurePrivateDirectory(temporary / "link"); }, "symbolic link");
  expectRefusal([&] { ensurePrivateDirectory(temporary / "link/"); }, "symbolic link");
  // A dangling link is refused too, and nothing is created at its target.
  ASSERT_EQ(::symlink((temporary / "target-of-dangling").c_str(), (temporary / "dangling").c_str()), 0);
  expectRefusal([&] { ensurePrivateDirectory(temporary / "dangling"); }, "symbolic link");
  EXPECT_FALSE(exists(temporary / "target-of-dangling"));
}

TEST(PrivateFilesTest, FollowsAnIntermediateLinkOfTheCurrentUser) {
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkdir((temporary / "real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("real", (temporary / "link").c_str()), 0);
  EXPECT_NO_THROW(ensurePrivateDirectory(temporary / "link/sub"));
  EXPECT_TRUE(isDirectory(temporary / "real/sub"));
}

TEST(PrivateFilesTest, RefusesAnIntermediateLinkPlantedByAnotherUser) {
  if (!runningAsRoot()) {
    GTEST_SKIP() << "needs root to give a link to another user";
  }
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkdir((temporary / "victim").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((temporary / "victim").c_str(), (temporary / "planted").c_str()), 0);
  ASSERT_EQ(::lchown((temporary / "planted").c_str(), kOtherUser, kOtherUser), 0);
  expectRefusal([&] { ensurePrivateDirectory(temporary / "planted/log"); }, "owned by uid 54321");
  EXPECT_FALSE(exists(temporary / "victim/log"));
}

TEST(PrivateFilesTest, RefusesSomethingThatIsNotADirectory) {
  TemporaryDirectory temporary;
  writeFile(temporary / "file", "x");
  expectRefusal([&] { ensurePrivateDirectory(temporary / "file"); }, "not a directory");
  expectRefusal([&] { ensurePrivateDirectory(temporary / "file/below"); }, "not a directory");
  ASSERT_EQ(::mkfifo((temporary / "fifo").c_str(), 0600), 0);
  expectRefusal([&] { ensurePrivateDirectory(temporary / "fifo"); }, "not a directory");
}

TEST(PrivateFilesTest, RefusesADirectoryWritableByGroupOrOthers) {
  TemporaryDirectory temporary;
  for (mode_t mode : {0770, 0757, 0777, 01777}) {
    const std::string path = temporary / ("mode" + std::to_string(mode));
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    expectRefusal([&] { ensurePrivateDirectory(path); }, "writable by group or others");
  }
  // A world-writable directory earlier in the path (like /tmp) is fine.
  const std::string shared = temporary / "shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  EXPECT_NO_THROW(ensurePrivateDirectory(shared + "/mine"));
}

TEST(PrivateFilesTest, RefusesADirectoryOwnedByAnotherUser) {
  if (!runningAsRoot()) {
    GTEST_SKIP() << "needs root to give a directory to another user";
  }
  TemporaryDirectory temporary;
  const std::string path = temporary / "theirs";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(::chown(path.c_str(), kOtherUser, kOtherUser), 0);
  expectRefusal([&] { ensurePrivateDirectory(path); }, "owned by uid 54321");
}

TEST(PrivateFilesTest, OpenPrivateDirectoryReturnsAUsableDescriptor) {
  TemporaryDirectory temporary;
  FileDescriptor directory(openPrivateDirectory(temporary / "d"));
  ASSERT_TRUE(directory.valid());
  FileDescriptor file(::openat(directory.get(), "inside", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(file.valid());
  EXPECT_TRUE(exists(temporary / "d/inside"));
}

TEST(PrivateFilesTest, OpenExistingPrivateDirectoryCreatesNothing) {
  TemporaryDirectory temporary;
  EXPECT_EQ(openExistingPrivateDirectory(temporary / "missing/deeper"), -1);
  EXPECT_FALSE(exists(temporary / "missing"));
  ASSERT_EQ(::mkdir((temporary / "present").c_str(), 0700), 0);
  FileDescriptor directory(openExistingPrivateDirectory(temporary / "present"));
  EXPECT_TRUE(directory.valid());
  ASSERT_EQ(::chmod((temporary / "present").c_str(), 0777), 0);
  expectRefusal([&] { FileDescriptor(openExistingPrivateDirectory(temporary / "present")); },
                "writable by group or others");
}

TEST(PrivateFilesTest, AcceptsARelativePath) {
  TemporaryDirectory temporary;
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(::chdir(temporary.path().c_str()), 0);
  EXPECT_NO_THROW(ensurePrivateDirectory("rel/dir"));
  EXPECT_NO_THROW(ensurePrivateDirectory("./rel/dir"));
  ASSERT_EQ(::chdir(previous), 0);
  EXPECT_EQ(modeOf(temporary / "rel/dir"), 0700u);
}

TEST(PrivateFilesTest, RejectsAnEmptyPath) {
  try {
    ensurePrivateDirectory("");
    ADD_FAILURE() << "expected an exception";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtParamInvalid);
  }
}

TEST(PrivateFilesTest, OpenPrivateFileCreatesMode0600) {
  TemporaryDirectory temporary;
  const mode_t previous = ::umask(0);
  FileDescriptor file(openPrivateFile(temporary / "new.log", O_WRONLY | O_CREAT | O_APPEND));
  ::umask(previous);
  ASSERT_TRUE(file.valid());
  EXPECT_EQ(modeOf(temporary / "new.log"), 0600u);
  const int flags = ::fcntl(file.get(), F_GETFL);
  EXPECT_EQ(flags & O_NONBLOCK, 0) << "the internal O_NONBLOCK must be cleared";
  EXPECT_NE(flags & O_APPEND, 0);
  EXPECT_NE(::fcntl(file.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(PrivateFilesTest, OpenPrivateFileRefusesASymbolicLink) {
  TemporaryDirectory temporary;
  writeFile(temporary / "target", "precious");
  ASSERT_EQ(::symlink((temporary / "target").c_str(), (temporary / "link").c_str()), 0);
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary / "link", O_WRONLY | O_CREAT | O_TRUNC)); },
                "symbolic link");
  EXPECT_EQ(readFile(temporary / "target"), "precious");
}

TEST(PrivateFilesTest, OpenPrivateFileRefusesAFifoWithoutBlocking) {
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkfifo((temporary / "fifo").c_str(), 0600), 0);
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary / "fifo", O_WRONLY | O_APPEND)); },
                "not a regular file");
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary / "fifo", O_RDONLY)); }, "not a regular file");
}

TEST(PrivateFilesTest, OpenPrivateFileRefusesADirectory) {
  TemporaryDirectory temporary;
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary.path(), O_RDONLY)); }, "not a regular file");
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary.path(), O_WRONLY)); }, "not a regular file");
}

TEST(PrivateFilesTest, OpenPrivateFileRefusesAnotherUsersFileWithoutTruncatingIt) {
  if (!runningAsRoot()) {
    GTEST_SKIP() << "needs root to give a file to another user";
  }
  TemporaryDirectory temporary;
  writeFile(temporary / "theirs", "their data");
  ASSERT_EQ(::chown((temporary / "theirs").c_str(), kOtherUser, kOtherUser), 0);
  expectRefusal([&] { FileDescriptor(openPrivateFile(temporary / "theirs", O_WRONLY | O_TRUNC)); },
                "owned by uid 54321");
  EXPECT_EQ(readFile(temporary / "theirs"), "their data");
}

TEST(PrivateFilesTest, OpenPrivateFileAtRejectsPathsThatAreNotOneComponent) {
  TemporaryDirectory temporary;
  FileDescriptor directory(openPrivateDirectory(temporary.path()));
  for (const char* name : {"", ".", "..", "a/b", "/etc/passwd"}) {
    try {
      FileDescriptor(openPrivateFileAt(directory.get(), name, O_RDONLY));
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const RuntimeError& error) {
      EXPECT_EQ(error.code(), ErrorCode::kRtParamInvalid);
    }
  }
}

TEST(PrivateFilesTest, WriteFileAtomicallyCreatesAPrivateFileInAPrivateDirectory) {
  TemporaryDirectory temporary;
  writeFileAtomically(temporary / "status", "1.status", "hello\n");
  EXPECT_EQ(readFile(temporary / "status/1.status"), "hello\n");
  EXPECT_EQ(modeOf(temporary / "status"), 0700u);
  EXPECT_EQ(modeOf(temporary / "status/1.status"), 0600u);
}

TEST(PrivateFilesTest, WriteFileAtomicallyReplacesAndLeavesNoTemporaryFiles) {
  TemporaryDirectory temporary;
  writeFileAtomically(temporary.path(), "f", "first");
  writeFileAtomically(temporary.path(), "f", "second, longer");
  writeFileAtomically(temporary.path(), "f", "");
  EXPECT_EQ(readFile(temporary / "f"), "");
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(temporary.path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(PrivateFilesTest, WriteFileAtomicallyReplacesAPlantedLinkWithoutFollowingIt) {
  TemporaryDirectory temporary;
  writeFile(temporary / "target", "precious");
  ASSERT_EQ(::symlink((temporary / "target").c_str(), (temporary / "f").c_str()), 0);
  writeFileAtomically(temporary.path(), "f", "mine");
  EXPECT_EQ(readFile(temporary / "target"), "precious");
  struct stat status {};
  ASSERT_EQ(::lstat((temporary / "f").c_str(), &status), 0);
  EXPECT_TRUE(S_ISREG(status.st_mode));
  EXPECT_EQ(readFile(temporary / "f"), "mine");
}

TEST(PrivateFilesTest, WriteFileAtomicallyRefusesAnUnsafeDirectoryOrName) {
  TemporaryDirectory temporary;
  ASSERT_EQ(::mkdir((temporary / "open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((temporary / "open").c_str(), 0777), 0);
  expectRefusal([&] { writeFileAtomically(temporary / "open", "f", "x"); }, "writable by group or others");
  EXPECT_FALSE(exists(temporary / "open/f"));
  EXPECT_THROW(writeFileAtomically(temporary.path(), "../escape", "x"), RuntimeError);
  EXPECT_THROW(writeFileAtomically(temporary.path(), "", "x"), RuntimeError);
}

TEST(PrivateFilesTest, FileDescriptorClosesAndMoves) {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    FileDescriptor first(raw);
    FileDescriptor second(std::move(first));
    EXPECT_FALSE(first.valid());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_EQ(second.get(), raw);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1) << "descriptor should be closed";
}

}  // namespace
}  // namespace npusim::runtime

#include "tools/KeyValueFile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/BoundedFile.h"
#include "tools/tests/ToolsTestSupport.h"

namespace npusim::tools {

TEST(KeyValueFile, ParsesInstallInfoLeniently) {
  testing::TemporaryDirectory dir;
  testing::writeFile(dir / "ascend_toolkit_install.info",
                     "package_name=Ascend-cann-toolkit\r\nversion = 8.0.RC2\n# comment\n\npath=/usr/local/Ascend/ascend-toolkit/8.0.RC2\n");
  const KeyValueFile file = readKeyValueFile(dir / "ascend_toolkit_install.info");
  EXPECT_TRUE(file.readable);
  EXPECT_EQ(file.value("version"), "8.0.RC2");
  EXPECT_EQ(file.value("package_name"), "Ascend-cann-toolkit");
  EXPECT_EQ(file.value("path"), "/usr/local/Ascend/ascend-toolkit/8.0.RC2");
  EXPECT_TRUE(file.problems.empty());
}

TEST(KeyValueFile, ReportsMalformedContent) {
  testing::TemporaryDirectory dir;
  testing::writeFile(dir / "version.info", "Version=24.1.rc3\ngarbage line\n=x\nVersion=25\nname=\xff\xfe\n");
  const KeyValueFile file = readKeyValueFile(dir / "version.info");
  EXPECT_EQ(file.value("Version"), "24.1.rc3");
  ASSERT_EQ(file.problems.size(), 4u);
  EXPECT_EQ(file.problems[0], "line 2: not key=value");
  EXPECT_EQ(file.problems[1], "line 3: empty key");
  EXPECT_EQ(file.problems[2], "line 4: Version repeated (the first is used)");
  EXPECT_EQ(file.problems[3], "line 5: bytes that are not UTF-8");
  testing::writeFile(dir / "binary", std::string("\x7f" "ELF\0\0\0", 7));
  EXPECT_EQ(readKeyValueFile(dir / "binary").problems.front(), "contains NUL bytes: not a text file");
}

TEST(KeyValueFile, BadFilesAreReportedNotFatal) {
  testing::TemporaryDirectory dir;
  EXPECT_EQ(readKeyValueFile(dir / "missing").error, "No such file or directory");
  EXPECT_EQ(readKeyValueFile(dir.path()).error, "is a directory");
  ::symlink((dir / "a").c_str(), (dir / "b").c_str());
  ::symlink((dir / "b").c_str(), (dir / "a").c_str());
  EXPECT_NE(readKeyValueFile(dir / "a").error.find("symbolic link loop"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(readKeyValueFile(dir / "fifo").error, "not a regular file");  // and no hang waiting for a writer
  testing::writeFile(dir / "huge", std::string(kMaxVersionFileBytes + 10, 'x'));
  const KeyValueFile huge = readKeyValueFile(dir / "huge");
  EXPECT_TRUE(huge.readable);
  EXPECT_NE(huge.problems.back().find("not a version file"), std::string::npos);
  if (::geteuid() != 0) {
    testing::writeFile(dir / "secret", "Version=1\n");
    ::chmod((dir / "secret").c_str(), 0);
    EXPECT_EQ(readKeyValueFile(dir / "secret").error, "Permission denied");
  }
}

TEST(BoundedFile, ReadsAtMostTheLimit) {
  testing::TemporaryDirectory dir;
  testing::writeFile(dir / "f", "0123456789");
  const BoundedRead read = readBounded(dir / "f", 4);
  EXPECT_TRUE(read.ok);
  EXPECT_TRUE(read.truncated);
  EXPECT_EQ(read.content, "0123");
  EXPECT_EQ(read.fileSize, 10u);
}

}  // namespace npusim::tools

#include "runtime/ConfigFile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/ChipSpec.h"
#include "runtime/Error.h"
#include "TestSupport.h"

namespace npusim::runtime {
namespace {

using testing::TemporaryDirectory;

std::string errorOf(const std::string& path) {
  try {
    readConfigFile(path, "chip file");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ConfigFile, ReadsRegularFile) {
  TemporaryDirectory directory;
  const std::string path = directory.path() + "/a.ini";
  std::ofstream(path) << "key = 1\n";
  EXPECT_EQ(readConfigFile(path, "chip file"), "key = 1\n");
}

TEST(ConfigFile, RefusesFifoWithoutBlocking) {
  TemporaryDirectory directory;
  const std::string path = directory.path() + "/x.ini";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(errorOf(path), "chip file " + path + " cannot be read: it is a FIFO, not a regular file");
}

TEST(ConfigFile, RefusesDirectoryDeviceAndMissingFile) {
  TemporaryDirectory directory;
  EXPECT_EQ(errorOf(directory.path()), "chip file " + directory.path() + " cannot be read: it is a directory, not a regular file");
  const std::string link = directory.path() + "/zero.ini";
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_EQ(errorOf(link), "chip file " + link + " cannot be read: it is a character device, not a regular file");
  EXPECT_EQ(errorOf(directory.path() + "/missing.ini"),
            "chip file " + directory.path() + "/missing.ini cannot be read: No such file or directory");
}

TEST(ConfigFile, CapsTheSize) {
  TemporaryDirectory directory;
  const std::string path = directory.path() + "/big.ini";
  std::ofstream(path) << std::string(2000, '#');
  EXPECT_THROW(readConfigFile(path, "chip file", 1000), ConfigError);
  EXPECT_EQ(readConfigFile(path, "chip file", 4000).size(), 2000u);
}

TEST(ConfigFile, PrintableTextEscapesBytes) {
  EXPECT_EQ(printableText(std::string("18\0" "00", 5)), "18\\x0000");
  EXPECT_EQ(printableText("\x1b[31m\xff"), "\\x1b[31m\\xff");
  EXPECT_EQ(printableText("abcdef", 3), "abc...");
}

TEST(ChipSpecValidation, RefusesNonFiniteZeroAndMalformedValues) {
  const std::string text(embeddedChipFiles().front().text);
  const auto withValue = [&](const std::string& key, const std::string& value) {
    std::string result;
    size_t position = 0;
    while (position < text.size()) {
      size_t end = text.find('\n', position);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(position, end - position);
      if (line.rfind(key + " ", 0) == 0 || line.rfind(key + "=", 0) == 0) line = key + " = " + value;
      result += line + "\n";
      position = end + 1;
    }
    return result;
  };
  const auto message = [&](const std::string& key, const std::string& value) -> std::string {
    try {
      parseChipSpec(withValue(key, value), "t.ini");
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_NE(message("cube_frequency_mhz", "nan").find("cube_frequency_mhz = nan is not a finite number"), std::string::npos);
  EXPECT_NE(message("cube_frequency_mhz", "inf").find("not a finite number"), std::string::npos);
  EXPECT_NE(message("cube_fp16_macs_per_cycle", "0").find("expected a number > 0"), std::string::npos);
  EXPECT_NE(message("device_capability", "abc").find("expected <major>.<minor>"), std::string::npos);
  EXPECT_NE(message("cube_frequency_mhz", "nan").find("chip file t.ini line "), std::string::npos);
  EXPECT_EQ(message("cube_frequency_mhz", "1800"), "no error");
}

}  // namespace
}  // namespace npusim::runtime

#include "tools/SmiCommand.h"

#include <gtest/gtest.h>

#include <sstream>

#include "runtime/ChipSpec.h"

namespace npusim::tools {

namespace {

struct Result {
  int status;
  std::string out, err;
};

class SmiCommandTest : public ::testing::Test {
 protected:
  Result run(std::vector<std::string> arguments) {
    SmiEnvironment environment;
    environment.snapshot = [this] {
      ++snapshots_;
      runtime::ProcessStatus process;
      process.pid = 4242;
      process.processName = "python3";
      process.updatedUnixMs = 1;
      process.devices = {{2, 0, 512ull << 20, 0}};
      return buildSnapshot(runtime::findChip("Ascend910B4"), 4, "25.5.2", {}, {process},
                           [](int id) { return "0000:0" + std::to_string(id) + ":00.0"; });
    };
    environment.sleep = [this](int ms) { slept_.push_back(ms); };
    environment.hostCpus = 4;
    std::ostringstream out, err;
    const int status = runNpuSmi(arguments, environment, out, err);
    return {status, out.str(), err.str()};
  }
  int snapshots_ = 0;
  std::vector<int> slept_;
};

}  // namespace

TEST_F(SmiCommandTest, InfoPrintsTheTable) {
  const Result result = run({"info"});
  EXPECT_EQ(result.status, 0);
  EXPECT_NE(result.out.find("| npu-smi 25.5.2                   Version: 25.5.2"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| 3     910B4 "), std::string::npos);
  EXPECT_NE(result.out.find("| 2       0                 | 4242          | python3                  | 512 "), std::string::npos);
  EXPECT_NE(result.out.find("No running processes found in NPU 0"), std::string::npos);
  EXPECT_EQ(result.out.find("No running processes found in NPU 2"), std::string::npos);
  EXPECT_NE(result.out.find("/ 32768 "), std::string::npos);  // 910B4: 32 GB HBM
}

TEST_F(SmiCommandTest, Subcommands) {
  EXPECT_NE(run({"info", "-l"}).out.find("Total Count                    : 4"), std::string::npos);
  EXPECT_NE(run({"info", "-m"}).out.find("Ascend 910B4"), std::string::npos);
  const Result usages = run({"info", "-t", "usages", "-i", "2"});
  EXPECT_EQ(usages.status, 0);
  EXPECT_NE(usages.out.find("NPU ID                         : 2"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "usages", "-i", "2", "-c", "0"}).out.find("Chip ID                        : 0"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "board", "-i", "1"}).out.find("PCIe Bus Info                  : 0000:01:00.0"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "common", "-i", "0", "-c", "0"}).out.find("NPU Real-time Power(W)"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "memory", "-i", "0"}).out.find("HBM Capacity(MB)               : 32768"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "proc-mem", "-i", "2"}).out.find("Process id:4242"), std::string::npos);
  EXPECT_NE(run({"info", "-t", "proc-mem", "-i", "1"}).out.find("No process in device."), std::string::npos);
  EXPECT_NE(run({"info", "-t", "topo"}).out.find("NPU3       HCCS       HCCS       HCCS       X          2-3"),
            std::string::npos);
  EXPECT_NE(run({"-v"}).out.find("25.5.2"), std::string::npos);
}

TEST_F(SmiCommandTest, WatchRefreshesAtTheInterval) {
  const Result result = run({"info", "watch", "-d", "2", "-n", "3", "-i", "2"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out.rfind("NPU     Chip    Pwr(W)", 0), 0u);
  size_t rows = 0;
  for (size_t at = 0; (at = result.out.find("\n2       0 ", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(snapshots_, 3);
  EXPECT_EQ(slept_, (std::vector<int>{2000, 2000}));
}

TEST_F(SmiCommandTest, UsageErrorsInNpuSmiStyle) {
  for (const auto& arguments : std::vector<std::vector<std::string>>{
           {"bogus"}, {"info", "-x"}, {"info", "-t", "usages"}, {"info", "-t", "nonsense", "-i", "0"},
           {"info", "-t", "usages", "-i", "abc"}, {"info", "-i", "0"}, {"info", "-l", "-m"}, {"info", "watch", "-d", "0"},
           {"info", "-t"}}) {
    const Result result = run(arguments);
    EXPECT_EQ(result.status, 255) << arguments.back();
    EXPECT_NE(result.err.find("Command error, please input correct command."), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("Usage: npu-smi"), std::string::npos);
    EXPECT_TRUE(result.out.empty());
  }
  const Result badId = run({"info", "-t", "usages", "-i", "9"});
  EXPECT_EQ(badId.status, 255);
  EXPECT_NE(badId.err.find("The NPU ID 9 is invalid. Valid NPU IDs: 0-3"), std::string::npos);
  const Result badChip = run({"info", "-t", "board", "-i", "0", "-c", "3"});
  EXPECT_EQ(badChip.status, 255);
  EXPECT_NE(badChip.err.find("chip ID 3 is invalid"), std::string::npos);
}

}  // namespace npusim::tools

#include "tools/SmiLayout.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <vector>

#include "tools/tests/ToolsTestSupport.h"

namespace npusim::tools {

namespace {

// The devices of the §18.1 fixture.
SmiSnapshot fixtureSnapshot() {
  SmiSnapshot snapshot;
  snapshot.driverVersion = "24.1.rc3";
  SmiDevice first;
  first.npuId = 0;
  first.name = "910B1";
  first.busId = "0000:C1:00.0";
  first.powerW = 94.6;
  first.temperatureC = 49;
  first.hbmUsedMiB = 3373;
  first.hbmTotalMiB = 65536;
  SmiDevice second = first;
  second.npuId = 1;
  second.busId = "0000:01:00.0";
  second.powerW = 97.8;
  second.temperatureC = 48;
  second.hbmUsedMiB = 3367;
  second.processes = {{30496, "", 328}, {30336, "", 3790}};
  snapshot.devices = {first, second};
  return snapshot;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) result.push_back(line);
  return result;
}

std::vector<size_t> barPositions(const std::string& line) {
  std::vector<size_t> positions;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '|' || line[i] == '+') positions.push_back(i);
  }
  return positions;
}

}  // namespace

TEST(SmiLayout, InfoTableIsByteExactOnTheReferenceFixture) {
  const std::string expected = testing::readFile(std::string(NPUSIM_TOOLS_FIXTURE_DIR) + "/npu-smi-info-910B1.txt");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(formatInfoTable(fixtureSnapshot()), expected);
}

TEST(SmiLayout, ColumnsStayInPlaceForEveryRowKind) {
  // Column by column: every line has the fixture's width, and the column bars of each
  // row kind sit where the fixture has them, whatever the values.
  SmiSnapshot snapshot = fixtureSnapshot();
  snapshot.driverVersion = "25.5.2";
  snapshot.devices[0].hbmUsedMiB = 61258;  // 5 digits: "61258/ 65536"
  snapshot.devices[0].powerW = 312.4;
  snapshot.devices[0].aicorePercent = 100;
  snapshot.devices[1].processes.push_back({1234567, "a-very-long-process-name-that-overflows", 65535});
  const auto produced = lines(formatInfoTable(snapshot));
  const auto reference = lines(testing::readFile(std::string(NPUSIM_TOOLS_FIXTURE_DIR) + "/npu-smi-info-910B1.txt"));
  const std::vector<size_t> threeColumns = barPositions(reference[2]);
  const std::vector<size_t> processColumns = barPositions(reference[reference.size() - 2]);
  for (const auto& line : produced) {
    ASSERT_EQ(line.size(), reference[0].size()) << line;
    const auto bars = barPositions(line);
    if (line.find("No running processes") != std::string::npos || line.find("Version:") != std::string::npos ||
        bars.size() == 2) {
      EXPECT_EQ(bars, (std::vector<size_t>{0, line.size() - 1})) << line;
    } else if (bars.size() == 5) {
      EXPECT_EQ(bars, processColumns) << line;
    } else {
      EXPECT_EQ(bars, threeColumns) << line;
    }
  }
  EXPECT_NE(formatInfoTable(snapshot).find("| 100         0    / 0          61258/ 65536         |"), std::string::npos);
}

TEST(SmiLayout, ThirdPartyParserRegexesMatch) {
  // The patterns npu-smi parsers use (device rows, chip rows, process rows).
  const std::string text = formatInfoTable(fixtureSnapshot());
  const std::regex deviceRow(R"(^\|\s+(\d+)\s+(\w+)\s+\|\s+(\w+)\s+\|\s+([\d.]+|NA)\s+(\d+)\s+(\d+)\s*/\s*(\d+)\s+\|$)");
  const std::regex chipRow(R"(^\|\s+(\d+)\s+\|\s+([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s+\|\s+(\d+)\s+(\d+)\s*/\s*(\d+)\s+(\d+)\s*/\s*(\d+)\s+\|$)");
  const std::regex processRow(R"(^\|\s+(\d+)\s+(\d+)\s+\|\s+(\d+)\s+\|\s*(.*?)\s*\|\s+(\d+)\s+\|$)");
  int devices = 0, chips = 0, processes = 0;
  std::smatch match;
  for (const auto& line : lines(text)) {
    if (std::regex_match(line, match, deviceRow)) {
      ++devices;
      EXPECT_EQ(match[2], "910B1");
      EXPECT_EQ(match[3], "OK");
    } else if (std::regex_match(line, match, chipRow)) {
      ++chips;
      EXPECT_EQ(match[7], "65536");
    } else if (std::regex_match(line, match, processRow)) {
      ++processes;
      EXPECT_EQ(match[1], "1");
    }
  }
  EXPECT_EQ(devices, 2);
  EXPECT_EQ(chips, 2);
  EXPECT_EQ(processes, 2);
}

TEST(SmiLayout, KeyValueLayouts) {
  const SmiSnapshot snapshot = fixtureSnapshot();
  const std::string list = formatCardList(snapshot);
  EXPECT_NE(list.find("\tTotal Count                    : 2\n"), std::string::npos);
  EXPECT_NE(list.find("\tNPU ID                         : 1\n\tChip Count                     : 1\n"), std::string::npos);
  const std::string map = formatChipMap(snapshot);
  EXPECT_EQ(map.rfind("\tNPU ID                         Chip ID                        Chip Logic ID", 0), 0u);
  EXPECT_NE(map.find("Ascend 910B1"), std::string::npos);
  const std::string usages = formatUsages(snapshot.devices[1], -1);
  for (const char* key : {"NPU ID", "Chip Count", "DDR Capacity(MB)", "DDR Usage Rate(%)", "DDR Hugepages Total(page)",
                          "DDR Hugepages Usage Rate(%)", "HBM Capacity(MB)", "HBM Usage Rate(%)", "Aicore Usage Rate(%)",
                          "Aivector Usage Rate(%)", "Aicpu Usage Rate(%)", "Ctrlcpu Usage Rate(%)",
                          "DDR Bandwidth Usage Rate(%)", "HBM Bandwidth Usage Rate(%)", "Chip ID"}) {
    EXPECT_NE(usages.find("\t" + std::string(key)), std::string::npos) << key;
  }
  EXPECT_NE(usages.find("HBM Capacity(MB)               : 65536\n"), std::string::npos);
  EXPECT_NE(usages.find("HBM Usage Rate(%)              : 5\n"), std::string::npos);  // 3367 / 65536
  EXPECT_EQ(formatUsages(snapshot.devices[1], 0).find("Chip Count"), std::string::npos);
  EXPECT_NE(formatProcessMemory(snapshot.devices[0], -1).find("No process in device."), std::string::npos);
  EXPECT_NE(formatProcessMemory(snapshot.devices[1], -1).find("Process id:30336\tProcess name:\tProcess memory(MB):3790"),
            std::string::npos);
  const std::string topo = formatTopology(snapshot, 8);
  EXPECT_NE(topo.find("NPU0       X          HCCS       0-3\n"), std::string::npos) << topo;
  EXPECT_NE(topo.find("NPU1       HCCS       X          4-7\n"), std::string::npos) << topo;
  EXPECT_EQ(formatWatchHeader(),
            "NPU     Chip    Pwr(W)      Temp(C)     AI Core(%)  AI Cpu(%)   Ctrl Cpu(%) Memory(%)   Memory BW(%)\n");
  EXPECT_EQ(formatWatchRows(snapshot, 1, -1), "1       0       97.8        48          0           0           0           5           0\n");
}

}  // namespace npusim::tools

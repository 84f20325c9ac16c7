#include "tools/SmiSnapshot.h"

#include <gtest/gtest.h>

#include "runtime/ChipSpec.h"

namespace npusim::tools {

namespace {

runtime::ProcessStatus status(int pid, uint64_t ms, std::vector<runtime::DeviceUsage> devices) {
  runtime::ProcessStatus s;
  s.pid = pid;
  s.processName = "python3";
  s.socName = "Ascend910B2";
  s.updatedUnixMs = ms;
  s.devices = std::move(devices);
  return s;
}

SmiSnapshot build(const std::vector<runtime::ProcessStatus>& before, const std::vector<runtime::ProcessStatus>& after,
                  int count = 4) {
  return buildSnapshot(runtime::findChip("Ascend910B2"), count, "25.5.2", before, after,
                       [](int id) { return "0000:0" + std::to_string(id) + ":00.0"; });
}

constexpr uint64_t kMiB = 1 << 20;

}  // namespace

TEST(SmiSnapshot, IdleServerShowsTheFirmwareReserveAndIdlePower) {
  const SmiSnapshot snapshot = build({}, {});
  ASSERT_EQ(snapshot.devices.size(), 4u);
  const runtime::ChipSpec& chip = runtime::findChip("Ascend910B2");
  for (const auto& device : snapshot.devices) {
    EXPECT_EQ(device.name, "910B2");
    EXPECT_EQ(device.hbmTotalMiB, 65536u);
    EXPECT_EQ(device.hbmUsedMiB, (chip.hbmBytes - chip.totalMemoryBytes) / kMiB);
    EXPECT_EQ(device.aicorePercent, 0);
    EXPECT_GE(device.powerW, 90.0);
    EXPECT_LT(device.powerW, 110.0);
    EXPECT_TRUE(device.processes.empty());
  }
  EXPECT_EQ(snapshot.devices[2].busId, "0000:02:00.0");
}

TEST(SmiSnapshot, ProcessesMemoryAndLoadComeFromTheRegistry) {
  const auto before = std::vector{status(100, 1000, {{1, 10 * kMiB, 64 * kMiB, 0}})};
  // 500 ms later the device was busy 250 ms of simulated time: 50 %.
  const auto after = std::vector{status(100, 1500, {{1, 10 * kMiB, 64 * kMiB + 1, 250'000'000}}),
                                 status(200, 1500, {{1, 0, 2 * kMiB, 0}, {3, 0, 0, 0}})};
  const SmiSnapshot idle = build({}, {});
  const SmiSnapshot snapshot = build(before, after);
  const SmiDevice& device = snapshot.devices[1];
  ASSERT_EQ(device.processes.size(), 2u);
  EXPECT_EQ(device.processes[0].pid, 100);
  EXPECT_EQ(device.processes[0].name, "python3");
  EXPECT_EQ(device.processes[0].memoryMiB, 65u);  // rounded up
  EXPECT_EQ(device.processes[1].memoryMiB, 2u);
  EXPECT_EQ(device.hbmUsedMiB, idle.devices[1].hbmUsedMiB + 67);
  EXPECT_EQ(device.aicorePercent, 50);
  EXPECT_GT(device.powerW, idle.devices[1].powerW + 100);
  EXPECT_GT(device.temperatureC, idle.devices[1].temperatureC);
  EXPECT_EQ(snapshot.devices[3].processes.size(), 1u);
  EXPECT_EQ(snapshot.devices[3].aicorePercent, 0);
  EXPECT_TRUE(snapshot.notes.empty());
}

TEST(SmiSnapshot, LoadFollowsTheSimulatedClockWhenPublished) {
  // 2 s of wall time, but 100 ms of simulated time of which 40 ms busy: the chip is 40 % busy.
  const auto before = std::vector{status(100, 1000, {{0, 0, 0, 10'000'000, 500'000'000}})};
  const auto after = std::vector{status(100, 3000, {{0, 0, 0, 50'000'000, 600'000'000}})};
  EXPECT_EQ(build(before, after).devices[0].aicorePercent, 40);
}

TEST(SmiSnapshot, LoadIsClampedAndDevicesBeyondTheServerAreNoted) {
  const auto before = std::vector{status(7, 1000, {{0, 0, 0, 0}})};
  const auto after = std::vector{status(7, 1100, {{0, 0, 0, 900'000'000}, {9, 0, kMiB, 0}})};
  const SmiSnapshot snapshot = build(before, after);
  EXPECT_EQ(snapshot.devices[0].aicorePercent, 100);
  ASSERT_EQ(snapshot.notes.size(), 1u);
  EXPECT_NE(snapshot.notes[0].find("NPU 9"), std::string::npos);
  auto otherChip = after;
  otherChip[0].socName = "Ascend910B4";
  otherChip[0].devices.pop_back();
  const SmiSnapshot mismatched = build(before, otherChip);
  ASSERT_EQ(mismatched.notes.size(), 1u);
  EXPECT_EQ(mismatched.notes[0], "process 7 simulates Ascend910B4, this npu-smi shows Ascend910B2 (NPUSIM_SOC differs)");
}

TEST(SmiSnapshot, DriverVersionComesFromTheDataFile) { EXPECT_EQ(simulatedDriverVersion(), NPUSIM_SIMULATED_DRIVER_VERSION); }

}  // namespace npusim::tools

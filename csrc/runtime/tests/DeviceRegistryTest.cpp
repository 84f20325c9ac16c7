#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/DeviceRegistry.h"
#include "runtime/Error.h"
#include "TestSupport.h"

using namespace npusim::runtime;

TEST(VisibleDevices, UnsetMeansAll) {
  EXPECT_EQ(parseVisibleDevices(std::nullopt, 8), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(VisibleDevices, CommaSeparatedAscendingList) {
  EXPECT_EQ(parseVisibleDevices("0,2,5", 8), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(parseVisibleDevices(" 3, 4", 8), (std::vector<int>{3, 4}));
}

TEST(VisibleDevices, ParsingStopsAtFirstInvalidCharacter) {
  EXPECT_EQ(parseVisibleDevices("1,2,x,4", 8), (std::vector<int>{1, 2}));
  EXPECT_EQ(parseVisibleDevices("1,3a,5", 8), (std::vector<int>{1, 3}));
  EXPECT_TRUE(parseVisibleDevices("", 8).empty());
  EXPECT_TRUE(parseVisibleDevices("-1", 8).empty());
}

TEST(VisibleDevices, NotStrictlyAscendingGivesNoDevice) {
  EXPECT_TRUE(parseVisibleDevices("2,1", 8).empty());
  EXPECT_TRUE(parseVisibleDevices("1,1", 8).empty());
}

TEST(VisibleDevices, EntryBeyondPhysicalCountTruncates) {
  EXPECT_EQ(parseVisibleDevices("0,1,9,3", 8), (std::vector<int>{0, 1}));
  EXPECT_EQ(parseVisibleDevices("4", 2), (std::vector<int>{}));
}

TEST(DeviceRegistry, LogicalIdsMapToVisiblePhysicalIds) {
  DeviceRegistry registry(findChip("Ascend910B2"), 8, std::string("2,6"));
  EXPECT_EQ(registry.deviceCount(), 2);
  EXPECT_EQ(registry.physicalDeviceCount(), 8);
  EXPECT_EQ(registry.physicalId(0), 2);
  EXPECT_EQ(registry.physicalId(1), 6);
  EXPECT_NE(registry.uuid(0), registry.uuid(1));
}

TEST(DeviceRegistry, InvalidDeviceGives107001WithTheCannDetail) {
  DeviceRegistry registry(findChip("Ascend910B2"), 8, std::nullopt);
  try {
    registry.checkDevice(99, "c10_npu::SetDevice(device_id_)");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRtInvalidDeviceId);
    const std::string text = e.what();
    EXPECT_NE(text.find("NPU function error: c10_npu::SetDevice(device_id_), error code is 107001"), std::string::npos)
        << text;
    EXPECT_NE(text.find("[Error]: Invalid device ID."), std::string::npos) << text;
    EXPECT_NE(text.find("set drv device=99, valid device range is [0, 8)"), std::string::npos) << text;
  }
  EXPECT_THROW(registry.checkDevice(-1, "x"), RuntimeError);
  EXPECT_NO_THROW(registry.checkDevice(7, "x"));
}

TEST(DeviceRegistry, FromEnvironment) {
  const npusim::runtime::testing::ScopedEnv count("NPUSIM_DEVICE_COUNT", "4");
  const npusim::runtime::testing::ScopedEnv visible("ASCEND_RT_VISIBLE_DEVICES", "1,3");
  DeviceRegistry registry = DeviceRegistry::fromEnvironment();
  EXPECT_EQ(registry.physicalDeviceCount(), 4);
  EXPECT_EQ(registry.deviceCount(), 2);
  setenv("NPUSIM_DEVICE_COUNT", "0", 1);
  EXPECT_THROW(DeviceRegistry::fromEnvironment(), ConfigError);
  setenv("NPUSIM_DEVICE_COUNT", "eight", 1);
  EXPECT_THROW(DeviceRegistry::fromEnvironment(), ConfigError);
  unsetenv("NPUSIM_DEVICE_COUNT");
  unsetenv("ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(DeviceRegistry::fromEnvironment().deviceCount(), 8);  // the guards restore both afterwards
}

TEST(ErrorTextTest, RuntimeErrorsCarryTorchNpusHintLine) {
  const RuntimeError error(ErrorCode::kRtInvalidDeviceId, "aclrtSetDevice", "EE1001: detail");
  EXPECT_STREQ(error.what(),
               "NPU function error: aclrtSetDevice, error code is 107001\n[Error]: Invalid device ID.\n"
               "        Check whether the device ID is valid.\nEE1001: detail");
  EXPECT_STREQ(errorHint(ErrorCode::kRtTaskTimeout), "");  // torch_npu's table has no line for it
}

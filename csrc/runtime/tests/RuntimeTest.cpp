#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "runtime/Error.h"
#include "runtime/Runtime.h"

using namespace npusim::runtime;

namespace {

// The Runtime is a process-wide singleton built from the environment on first
// use, by whichever test of this binary touches it first (ForkSafetyTest does,
// when the binary runs every test in one process rather than one per CTest
// entry). So the configuration these tests expect is set before any test runs.
class RuntimeConfiguration : public ::testing::Environment {
 public:
  void SetUp() override {
    static char directory[] = "/tmp/npusim-runtime-test-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("NPUSIM_RUNTIME_DIR", directory, 1);
    setenv("ASCEND_PROCESS_LOG_PATH", directory, 1);
    setenv("NPUSIM_HBM_SIZE", "256M", 1);
    setenv("NPUSIM_DEVICE_COUNT", "4", 1);
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    unsetenv("NPUSIM_SOC");
  }
};
[[maybe_unused]] ::testing::Environment* const runtimeConfiguration =
    ::testing::AddGlobalTestEnvironment(new RuntimeConfiguration);

class RuntimeTest : public ::testing::Test {};

}  // namespace

TEST_F(RuntimeTest, SeesTheConfiguredDevices) {
  Runtime& rt = Runtime::instance();
  EXPECT_EQ(rt.deviceCount(), 4);
  EXPECT_EQ(rt.chip().socName, "Ascend910B2");
  EXPECT_EQ(rt.deviceCapacity(), 256ull << 20);
  const DeviceProperties p = rt.properties(2);
  EXPECT_EQ(p.name, "Ascend910B2");
  EXPECT_EQ(p.totalMemory, 256ull << 20);
  EXPECT_EQ(p.cubeCoreNum, 24);
  EXPECT_EQ(p.vectorCoreNum, 48);
  EXPECT_EQ(p.physicalId, 2);
}

TEST_F(RuntimeTest, SetDeviceValidatesAndIsPerThread) {
  Runtime& rt = Runtime::instance();
  rt.setDevice(1);
  EXPECT_EQ(rt.currentDevice(), 1);
  EXPECT_TRUE(rt.isDeviceInitialized(1));
  try {
    rt.setDevice(99);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRtInvalidDeviceId);
  }
  EXPECT_EQ(rt.currentDevice(), 1);  // a failed set_device changes nothing
  int other = -1;
  std::thread([&] { other = rt.currentDevice(); }).join();
  EXPECT_EQ(other, 0);
  rt.setDevice(0);
}

TEST_F(RuntimeTest, DevicesHaveTheirOwnMemoryAndStreams) {
  Runtime& rt = Runtime::instance();
  void* a = rt.allocator(0).allocate(1 << 20, 0);
  void* b = rt.allocator(3).allocate(1 << 20, 0);
  EXPECT_GT(rt.allocator(0).allocatedBytes(), 0u);
  EXPECT_TRUE(rt.memory(0).contains(a));
  EXPECT_FALSE(rt.memory(0).contains(b));
  EXPECT_TRUE(rt.memory(3).contains(b));
  rt.allocator(0).free(a);
  rt.allocator(3).free(b);
  rt.timeline(3).submit(0, 1000);
  EXPECT_GE(rt.timeline(3).deviceClock(), 1000u);
  rt.synchronizeDevice(3);
  EXPECT_GE(rt.hostClock().now(), rt.timeline(3).deviceClock());
  EXPECT_THROW(rt.allocator(7), RuntimeError);
}

TEST_F(RuntimeTest, ExceedingCapacityRaisesTheNpuOomAndRecovers) {
  Runtime& rt = Runtime::instance();
  void* big = rt.allocator(2).allocate(200ull << 20, 0);
  try {
    rt.allocator(2).allocate(100ull << 20, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("NPU out of memory. Tried to allocate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(NPU 2; 256.00 MiB total capacity;"), std::string::npos) << e.what();
  }
  rt.allocator(2).free(big);
  rt.resetDevice(2);
  EXPECT_EQ(rt.allocator(2).reservedBytes(), 0u);
  void* again = rt.allocator(2).allocate(100ull << 20, 0);
  EXPECT_NE(again, nullptr);
  rt.allocator(2).free(again);
}

TEST(ByteSize, ParsesUnitsAndRejectsGarbage) {
  EXPECT_EQ(parseByteSize("1024", "X"), 1024u);
  EXPECT_EQ(parseByteSize("64G", "X"), 64ull << 30);
  EXPECT_EQ(parseByteSize("512M", "X"), 512ull << 20);
  EXPECT_EQ(parseByteSize("1.5K", "X"), 1536u);
  EXPECT_THROW(parseByteSize("", "X"), ConfigError);
  EXPECT_THROW(parseByteSize("-1G", "X"), ConfigError);
  EXPECT_THROW(parseByteSize("12Q", "X"), ConfigError);
  EXPECT_THROW(parseByteSize("lots", "X"), ConfigError);
}

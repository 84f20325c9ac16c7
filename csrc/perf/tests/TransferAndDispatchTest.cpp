#include <gtest/gtest.h>

#include "perf/CostModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;

namespace {
const CostModel& b2() {
  static const CostModel model(runtime::findChip("Ascend910B2"));
  return model;
}
}  // namespace

TEST(Transfers, PinnedIsFasterThanPageable) {
  for (uint64_t bytes : {uint64_t(4), uint64_t(64) << 10, uint64_t(16) << 20, uint64_t(1) << 30}) {
    SCOPED_TRACE(bytes);
    EXPECT_LT(b2().hostToDevice(bytes, true), b2().hostToDevice(bytes, false));
    EXPECT_LT(b2().deviceToHost(bytes, true), b2().deviceToHost(bytes, false));
  }
  // 1 GiB pinned at ~25.6 GB/s (80% of PCIe 4.0 x16), pageable at ~12.8 GB/s.
  const double gib = double(uint64_t(1) << 30);
  EXPECT_NEAR(gib / (double(b2().hostToDevice(uint64_t(1) << 30, true)) * 1e-9) / 1e9, 25.6, 0.5);
  EXPECT_NEAR(gib / (double(b2().hostToDevice(uint64_t(1) << 30, false)) * 1e-9) / 1e9, 12.8, 0.3);
}

TEST(Transfers, GrowWithSizeAndDefaultToPageableReads) {
  EXPECT_EQ(b2().hostToDevice(0, true), 0u);
  EXPECT_EQ(b2().deviceToHost(0), 0u);
  EXPECT_LT(b2().hostToDevice(1 << 10, true), b2().hostToDevice(1 << 20, true));
  EXPECT_EQ(b2().deviceToHost(12345), b2().deviceToHost(12345, false));
  // A small copy is dominated by its fixed latency.
  EXPECT_GE(b2().deviceToHost(4), 10'000u);
}

TEST(Dispatch, DependsOnTheTaskQueueLevel) {
  const auto level0 = b2().hostDispatchNs(0);
  const auto level1 = b2().hostDispatchNs(1);
  const auto level2 = b2().hostDispatchNs(2);
  EXPECT_GT(level0, level1);  // synchronous launch
  EXPECT_GT(level1, level2);  // level 2 moves more work off the calling thread
  EXPECT_GE(level2, 10'000u);
  EXPECT_LE(level0, 40'000u);  // §6.3: ~15-40 us per op
  EXPECT_EQ(b2().hostDispatchNs(-5), level0);
  EXPECT_EQ(b2().hostDispatchNs(9), level2);
  EXPECT_LT(b2().hostDispatchNs(1, OperatorKind::kView), level2);
  EXPECT_EQ(b2().hostDispatchNs(1, OperatorKind::kMatmul), level1);
}

TEST(Dispatch, KernelFloorIsTheWorkingValue) {
  EXPECT_EQ(b2().kernelFloorNs(), 5'000u);  // §6.3: ~5-10 us per kernel
}

// One pricing of transfers for both faces (PyTorch copies and AscendCL memcpy/memset).
TEST(Transfers, OnePricingForCopiesAndMemsets) {
  const uint64_t bytes = uint64_t(64) << 20;
  const Cost toDevice = b2().transfer(Transfer::kHostToDevice, bytes, true);
  EXPECT_EQ(toDevice.deviceNs, b2().hostToDevice(bytes, true));
  EXPECT_EQ(toDevice.unit, Unit::kTransfer);
  EXPECT_EQ(b2().transfer(Transfer::kDeviceToHost, bytes, false).deviceNs, b2().deviceToHost(bytes, false));
  // A memset writes the bytes; a device copy reads and writes them: never cheaper.
  const Cost memset = b2().transfer(Transfer::kMemset, bytes, false);
  const Cost copy = b2().transfer(Transfer::kDeviceToDevice, bytes, false);
  EXPECT_GT(memset.deviceNs, 0u);
  EXPECT_LE(memset.deviceNs, copy.deviceNs);
}

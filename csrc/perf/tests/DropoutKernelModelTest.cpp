// torch_npu's dropout mask: one bit per element, priced per element drawn.
#include <gtest/gtest.h>

#include "perf/Calibration.h"
#include "perf/ChipRates.h"
#include "perf/DropoutKernelModel.h"
#include "perf/VectorModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;

TEST(DropoutKernelModel, BitMaskIsWhole128BitBlocks) {
  EXPECT_EQ(dropoutBitMaskBytes(0), 0);
  EXPECT_EQ(dropoutBitMaskBytes(1), 16);
  EXPECT_EQ(dropoutBitMaskBytes(128), 16);
  EXPECT_EQ(dropoutBitMaskBytes(129), 32);
  EXPECT_EQ(dropoutBitMaskBytes(96LL * 12 * 384 * 384), 96LL * 12 * 384 * 384 / 8);
}

TEST(DropoutKernelModel, WritesTheBitMaskAndDrawsPerElement) {
  const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  const int64_t n = 96LL * 12 * 384 * 384;
  const FusedKernelCost cost = priceDropoutMaskGeneration(rates, n);
  EXPECT_DOUBLE_EQ(cost.bytes, double(n) / 8);
  EXPECT_EQ(cost.unit, Unit::kVector);
  // The Philox work of n one-byte decisions, the same as bernoulli_ into a bool mask.
  VectorWork perElement;
  perElement.elements = double(n);
  perElement.opsPerElement = calibration::kOpsRandom;
  perElement.computeType = DType::kUInt8;
  EXPECT_NEAR(cost.vectorSeconds, estimateVector(rates, perElement).computeSeconds, 1e-12);
  EXPECT_NEAR(cost.seconds, calibration::kKernelFloorNs * 1e-9 + std::max(cost.vectorSeconds, cost.memorySeconds),
              1e-12);
  // Twice the elements: twice the work after the launch floor.
  const FusedKernelCost twice = priceDropoutMaskGeneration(rates, 2 * n);
  const double floor = calibration::kKernelFloorNs * 1e-9;
  EXPECT_NEAR((twice.seconds - floor) / (cost.seconds - floor), 2.0, 1e-9);
}

#include <gtest/gtest.h>

#include "perf/ChipRates.h"
#include "perf/CostModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;

TEST(ChipRates, AllFiveChipsLoadWithSensiblePeaks) {
  struct Expected {
    const char* name;
    double fp16Tflops;  // cores x 4096 x 2 x clock (ascend-hardware.md §2.2)
  };
  const Expected chips[] = {{"Ascend910B1", 363.7}, {"Ascend910B2", 353.9}, {"Ascend910B3", 294.9},
                            {"Ascend910B4", 245.8}, {"Ascend910A", 262.1}};
  for (const auto& expected : chips) {
    SCOPED_TRACE(expected.name);
    const CostModel model(runtime::findChip(expected.name));
    const ChipRates& rates = model.rates();
    EXPECT_NEAR(model.peakFlops(CubePrecision::kHalf) / 1e12, expected.fp16Tflops, 0.1);
    EXPECT_NEAR(model.peakFlops(CubePrecision::kFloat32) / model.peakFlops(CubePrecision::kHalf), 0.25, 1e-9);
    EXPECT_NEAR(model.peakFlops(CubePrecision::kHf32) / model.peakFlops(CubePrecision::kHalf), 0.5, 1e-9);
    EXPECT_NEAR(model.peakFlops(CubePrecision::kInt8) / model.peakFlops(CubePrecision::kHalf), 2.0, 1e-9);
    // Achievable HBM bandwidth between 0.5 and 1.6 TB/s, L2 of tens to hundreds of MB.
    EXPECT_GT(rates.hbmBytesPerSecond, 0.5e12);
    EXPECT_LT(rates.hbmBytesPerSecond, 1.6e12);
    EXPECT_GE(rates.l2Bytes, 32.0 * 1024 * 1024);
    EXPECT_GT(rates.vectorCores, 0);
    EXPECT_GT(rates.pcieBytesPerSecond, 1e10);
  }
}

TEST(ChipRates, Ascend910B2Baseline) {
  const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  EXPECT_EQ(rates.cubeCores, 24);
  EXPECT_EQ(rates.vectorCores, 48);
  EXPECT_DOUBLE_EQ(rates.clockHz, 1.8e9);
  EXPECT_NEAR(rates.hbmBytesPerSecond, 1.36e12, 1e9);  // 1.6 TB/s x 0.85
  EXPECT_DOUBLE_EQ(rates.vectorBytesPerRepeat, 256.0);
}

TEST(ChipRates, MissingNumbersFallBackToSafeDefaults) {
  runtime::ChipSpec empty;  // all zero: never divide by zero
  const ChipRates rates = ChipRates::fromChip(empty);
  EXPECT_GT(rates.cubeCores, 0);
  EXPECT_GT(rates.clockHz, 0);
  EXPECT_GT(rates.hbmBytesPerSecond, 0);
  EXPECT_GT(rates.macsPerCycle(CubePrecision::kFloat32), 0);
}

TEST(ChipRates, TwentyCoresStreamLessThanTheHbmAllows) {
  // 32 B/cycle per AI core's DMA (CANN ini ddr_rate): 24 cores at 1.8 GHz reach 1.38 TB/s, more than the
  // HBM's 1.36; 20 cores reach 1.15 TB/s, which bounds the 910B3.
  const ChipRates b2 = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  const ChipRates b3 = ChipRates::fromChip(runtime::findChip("Ascend910B3"));
  EXPECT_NEAR(b2.hbmBytesPerSecond, 1.6e12 * 0.85, 1e9);
  EXPECT_NEAR(b3.hbmBytesPerSecond, 20 * 32.0 * 1.8e9, 1e9);
  EXPECT_NEAR(b3.hbmBytesPerSecond / b2.hbmBytesPerSecond, 1.152 / 1.36, 0.002);
}

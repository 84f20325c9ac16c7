#include <gtest/gtest.h>

#include "perf/ChipRates.h"
#include "perf/FusedKernelModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;

namespace {

const ChipRates& b2() {
  static const ChipRates rates = ChipRates::fromChip(runtime::findChip("Ascend910B2"));
  return rates;
}

FusedKernelWork streaming(double elements, double bytesPerElement) {
  FusedKernelWork work;
  work.vectorElements = elements;
  work.opsPerElement = 6;
  work.hbmBytes = elements * bytesPerElement;
  return work;
}

}  // namespace

TEST(FusedKernelModel, VectorKernelIsBoundByHbmAtLargeSizes) {
  const FusedKernelCost cost = priceFusedKernel(b2(), streaming(1e9, 4));
  EXPECT_EQ(cost.unit, Unit::kVector);
  EXPECT_DOUBLE_EQ(cost.flops, 0);
  EXPECT_DOUBLE_EQ(cost.seconds, std::max({cost.vectorSeconds, cost.memorySeconds}));
  EXPECT_NEAR(cost.memorySeconds, 4e9 / b2().hbmBytesPerSecond, 1e-12);
}

TEST(FusedKernelModel, TinyKernelCostsTheFloor) {
  const FusedKernelCost cost = priceFusedKernel(b2(), streaming(16, 4));
  EXPECT_NEAR(cost.seconds, 5e-6, 1e-9);
}

TEST(FusedKernelModel, OneFusedKernelIsCheaperThanItsSteps) {
  // RMSNorm over 4096x4096 fp16: fused reads x and gamma once and writes y;
  // unfused (pow, mean, add, rsqrt, mul, mul) makes a round trip per step.
  const double elements = 4096.0 * 4096.0;
  const FusedKernelCost fused = priceFusedKernel(b2(), streaming(elements, 4));
  double unfused = 0;
  for (int step = 0; step < 6; ++step) unfused += priceFusedKernel(b2(), streaming(elements, 4)).seconds;
  EXPECT_LT(fused.seconds * 3, unfused);
}

TEST(FusedKernelModel, GroupedGemmsAddTheirFlops) {
  FusedKernelWork work;
  for (int group = 0; group < 4; ++group) work.addGemm(GemmShape{1, 512, 1024, 2048});
  work.hbmBytes = 2.0 * (4 * 512 * 2048 + 4 * 2048 * 1024 + 4 * 512 * 1024);
  const FusedKernelCost cost = priceFusedKernel(b2(), work);
  EXPECT_DOUBLE_EQ(cost.flops, 4 * 2.0 * 512 * 1024 * 2048);
  EXPECT_EQ(cost.unit, Unit::kCube);
  EXPECT_GT(cost.seconds, cost.cubeSeconds);
}

TEST(FusedKernelModel, ExtraGroupsFoldIntoTheLastSlot) {
  FusedKernelWork work;
  for (int group = 0; group < 20; ++group) work.addGemm(GemmShape{1, 128, 256, 256});
  EXPECT_EQ(work.gemmCount, FusedKernelWork::kMaxGemms);
  const FusedKernelCost cost = priceFusedKernel(b2(), work);
  EXPECT_DOUBLE_EQ(cost.flops, 20 * 2.0 * 128 * 256 * 256);
}

TEST(FusedKernelModel, MaskedBlocksAreSkipped) {
  FusedKernelWork full;
  full.addGemm(GemmShape{32, 2048, 2048, 128});
  FusedKernelWork causal = full;
  causal.cubeFraction = 0.5;
  EXPECT_DOUBLE_EQ(priceFusedKernel(b2(), causal).flops, priceFusedKernel(b2(), full).flops / 2);
}

TEST(FusedKernelModel, CubePrecisionOfDtypes) {
  CubePrecision precision{};
  int bytes = 0;
  EXPECT_TRUE(fusedCubePrecision(DType::kBFloat16, precision, bytes));
  EXPECT_EQ(precision, CubePrecision::kHalf);
  EXPECT_EQ(bytes, 2);
  EXPECT_TRUE(fusedCubePrecision(DType::kFloat32, precision, bytes));
  EXPECT_EQ(precision, CubePrecision::kFloat32);
  EXPECT_FALSE(fusedCubePrecision(DType::kInt64, precision, bytes));
}

TEST(FusedKernelModel, BlockParallelKernelPaysItsWaveQuantisation) {
  // FlashAttention-style: the work of 24 blocks fills the 24 AI Cube cores
  // once; 25 blocks of the same total work need two waves of 1/25 each.
  auto attention = [](double blocks) {
    FusedKernelWork work;
    work.addGemm(GemmShape{32, 4096, 4096, 128});
    work.vectorElements = 32.0 * 4096 * 4096;
    work.opsPerElement = 10;
    work.parallelBlocks = blocks;
    return priceFusedKernel(b2(), work);
  };
  const FusedKernelCost even = attention(0), filled = attention(24), tail = attention(25), few = attention(8);
  EXPECT_DOUBLE_EQ(filled.vectorSeconds, even.vectorSeconds);
  EXPECT_NEAR(tail.vectorSeconds / even.vectorSeconds, 2.0 * 24.0 / 25.0, 1e-9);
  // 8 blocks leave 16 of the 24 cores idle: three times the even spread.
  EXPECT_NEAR(few.cubeSeconds / even.cubeSeconds, 3.0, 1e-9);
}

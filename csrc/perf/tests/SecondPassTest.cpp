// The mechanisms of the model's second calibration pass (issue 12): L2
// residency, fused-attention parallelism, convolution efficiency, the
// dtype-independent L2-overflow stall, per-operator dispatch and the 910A.
#include <gtest/gtest.h>

#include <vector>

#include "TestTensors.h"
#include "perf/Calibration.h"
#include "perf/CostModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;
using namespace npusim::perf::testing;

namespace {

const CostModel& b2() {
  static const CostModel model(runtime::findChip("Ascend910B2"));
  return model;
}

// A binary element-wise kernel on `n` fp32 elements whose inputs are, or are
// not, in the L2.
Cost elementwise(int64_t n, bool resident) {
  const OwnedTensor a = tensor({n}, DType::kFloat32), b = tensor({n}, DType::kFloat32);
  const OwnedTensor out = tensor({n}, DType::kFloat32);
  std::vector<TensorDesc> in{a.desc(), b.desc()};
  for (auto& d : in) d.l2Resident = resident;
  const TensorDesc o = out.desc();
  return b2().price(OperatorKind::kElementwise, in.data(), 2, &o, 1, Placement::kAiCore, CostOptions{});
}

Cost attention(int64_t batch, int64_t heads, int64_t sq, int64_t sk) {
  const Operands qkv{tensor({batch, heads, sq, 128}), tensor({batch, heads, sk, 128}),
                     tensor({batch, heads, sk, 128})};
  const Operands out{tensor({batch, heads, sq, 128})};
  return price(b2(), OperatorKind::kAttention, qkv, out);
}

}  // namespace

TEST(L2Residency, ResidentInputsAreReadAtL2Bandwidth) {
  const int64_t n = int64_t(4) << 20;  // 16 MiB per operand: fits the 192 MB L2
  const Cost cold = elementwise(n, false), warm = elementwise(n, true);
  EXPECT_LT(warm.deviceNs, cold.deviceNs);
  // The output is still written to HBM: at most the two reads are saved.
  EXPECT_GT(double(warm.deviceNs), double(cold.deviceNs) / 3.0);
  EXPECT_LT(warm.bytes, cold.bytes);  // Cost::bytes counts HBM traffic only
}

TEST(L2Residency, ResidentGemmOperandsAreNotFetchedFromHbm) {
  // A memory-bound GEMM (K = 16): reading A from the L2 takes it off the HBM.
  const OwnedTensor a = tensor({65536, 16}), b = tensor({16, 4096}), c = tensor({65536, 4096});
  TensorDesc in[2] = {a.desc(), b.desc()};
  const TensorDesc out = c.desc();
  const Cost cold = b2().price(OperatorKind::kMatmul, in, 2, &out, 1, Placement::kAiCore, CostOptions{});
  in[0].l2Resident = true;
  const Cost warm = b2().price(OperatorKind::kMatmul, in, 2, &out, 1, Placement::kAiCore, CostOptions{});
  EXPECT_LT(warm.bytes, cold.bytes);
  EXPECT_LE(warm.deviceNs, cold.deviceNs);
}

TEST(FusedAttention, ParallelOverBatchHeadsAndQueryBlocks) {
  // One head and one 128-row query block occupy one of the 24 cores: 24
  // heads cost (almost) what one does; 48 heads take a second wave.
  const Cost one = attention(1, 1, 128, 8192);
  const Cost full = attention(1, 24, 128, 8192);
  const Cost twoWaves = attention(1, 48, 128, 8192);
  EXPECT_LT(double(full.deviceNs), 1.2 * double(one.deviceNs));
  EXPECT_GT(double(twoWaves.deviceNs), 1.5 * double(full.deviceNs));
  // The same work as 24 query blocks of one head also fills the chip.
  const Cost blocks = attention(1, 1, 24 * 128, 8192);
  EXPECT_NEAR(double(blocks.deviceNs) / double(full.deviceNs), 1.0, 0.1);
}

TEST(Convolution, SlowerThanItsGemmByTheMeasuredEfficiency) {
  // A 3x3 convolution (512 channels, 28x28, batch 64) against the GEMM of
  // its im2col shape: about 1.8x the Cube time (Calibration.h).
  const Operands in{tensor({64, 512, 28, 28}), tensor({512, 512, 3, 3})};
  const Operands out{tensor({64, 512, 28, 28})};
  const Cost conv = price(b2(), OperatorKind::kConvolution, in, out);
  const Operands gemmIn{tensor({64 * 28 * 28, 512 * 9}), tensor({512 * 9, 512})};
  const Operands gemmOut{tensor({64 * 28 * 28, 512})};
  const Cost gemm = price(b2(), OperatorKind::kMatmul, gemmIn, gemmOut);
  EXPECT_GT(double(conv.deviceNs), 1.5 * double(gemm.deviceNs));
  EXPECT_LT(double(conv.deviceNs), 2.0 * double(gemm.deviceNs));
}

TEST(GemmL2Stall, GrowsWithTheOverflowUpToThreeTimesTheL2AndNoneOnThe910A) {
  auto mm = [](const CostModel& model, int64_t n, DType dtype) {
    const Operands in{tensor({n, n}, dtype), tensor({n, n}, dtype)};
    const Operands out{tensor({n, n}, dtype)};
    const Cost cost = price(model, OperatorKind::kMatmul, in, out);
    return cost.flops / (double(cost.deviceNs) * 1e-9);
  };
  // fp16 8192^3 overflows the 192 MB L2 once (working set 2x the L2),
  // 10240^3 twice and more: the half-precision rate keeps declining (the
  // §3.3 sweep: 305.5 -> 274.8 fp16, 301.2 -> 300.9 bf16, the fit between).
  const double half = mm(b2(), 10240, DType::kFloat16) / mm(b2(), 8192, DType::kFloat16);
  EXPECT_LT(half, 0.97);
  EXPECT_GT(half, 0.90);
  // fp32 is past three times the L2 at 8192^3 already: no further decline
  // (80.4 -> 79.7 measured).
  const double single = mm(b2(), 10240, DType::kFloat32) / mm(b2(), 8192, DType::kFloat32);
  EXPECT_NEAR(single, 1.0, 0.02);
  // Below the L2 no stall: 4096^3 fp16 within 1% of 4096^3 priced without it.
  EXPECT_GT(mm(b2(), 4096, DType::kFloat16) / 1e12, 310.0);
  // The 910A's 32 MB L2 has no measured GEMM decline: no stall there.
  const CostModel a1(runtime::findChip("Ascend910A"));
  EXPECT_EQ(a1.rates().l2OverflowStall, 0.0);
  EXPECT_GT(b2().rates().l2OverflowStall, 0.0);
}

TEST(Dispatch, FifteenMicrosecondsPerOperatorWithTheTaskQueue) {
  // Issue 12: a loop of four small operators measures 60-65 us per iteration
  // on a 910B2 at TASK_QUEUE_ENABLE=1.
  EXPECT_EQ(b2().hostDispatchNs(1), 15'000u);
  EXPECT_EQ(b2().hostDispatchNs(1, OperatorKind::kSoftmax), 15'000u);
}

TEST(Dispatch, FusedAttentionCostsAboutSixtySevenMicrosecondsOfHostTime) {
  // pto-isa's torch_jit harness: npu_fused_infer_attention_score, one head of
  // 128, tiny device work, 67.1 us per call back to back on a 910B2.
  EXPECT_EQ(b2().hostDispatchNs(1, OperatorKind::kAttention), 67'000u);
  EXPECT_EQ(b2().hostDispatchNs(1, OperatorKind::kAttentionBackward), 67'000u);
  // The extra tiling work adds to every queue level's launch cost.
  EXPECT_EQ(b2().hostDispatchNs(0, OperatorKind::kAttention) - b2().hostDispatchNs(0), 52'000u);
  EXPECT_LT(b2().hostDispatchNs(1, OperatorKind::kView), b2().hostDispatchNs(1, OperatorKind::kAttention));
}

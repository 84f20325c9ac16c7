#include <gtest/gtest.h>

#include <cmath>

#include "TestTensors.h"
#include "perf/Calibration.h"
#include "perf/CostModel.h"
#include "perf/VectorModel.h"
#include "runtime/ChipSpec.h"

using namespace npusim;
using namespace npusim::perf;
using namespace npusim::perf::testing;

namespace {

const CostModel& b2() {
  static const CostModel model(runtime::findChip("Ascend910B2"));
  return model;
}

Cost mm(int64_t m, int64_t n, int64_t k, DType dtype = DType::kFloat16, CostOptions options = {}) {
  const Operands in{tensor({m, k}, dtype), tensor({k, n}, dtype)};
  const Operands out{tensor({m, n}, dtype)};
  return price(b2(), OperatorKind::kMatmul, in, out, Placement::kAiCore, options);
}

double tflops(const Cost& cost) { return cost.flops / seconds(cost) / 1e12; }

}  // namespace

// ------------------------------------------------------------------ Cube

TEST(CostModelMatmul, MonotonicInSize) {
  double previous = 0;
  for (int64_t n : {64, 128, 256, 512, 1024, 2048, 4096, 8192}) {
    const Cost cost = mm(n, n, n);
    EXPECT_EQ(cost.unit, Unit::kCube);
    EXPECT_DOUBLE_EQ(cost.flops, 2.0 * n * n * n);
    EXPECT_GT(cost.deviceNs, previous) << n;
    previous = double(cost.deviceNs);
  }
}

TEST(CostModelMatmul, NonMultiplesOf16ArePenalised) {
  // 4095 does less work than 4096 but takes longer: padding to the fractal
  // plus TransData passes for the unaligned ND operands (§6.2, §6.5).
  EXPECT_GT(mm(4095, 4095, 4095).deviceNs, mm(4096, 4096, 4096).deviceNs);
  EXPECT_LT(tflops(mm(4095, 4095, 4095)), 0.9 * tflops(mm(4096, 4096, 4096)));
  // Only the contiguous dimension of an operand matters for the layout pass.
  EXPECT_LT(tflops(mm(1000, 1024, 1000)), tflops(mm(1024, 1024, 1024)));
}

TEST(CostModelMatmul, Fp32IsSlowerByTheChipRatioAndHf32InBetween) {
  const Cost half = mm(4096, 4096, 4096, DType::kFloat16);
  const Cost bf16 = mm(4096, 4096, 4096, DType::kBFloat16);
  const Cost fp32 = mm(4096, 4096, 4096, DType::kFloat32);
  CostOptions hf32Allowed;
  hf32Allowed.allowHf32Matmul = true;
  const Cost hf32 = mm(4096, 4096, 4096, DType::kFloat32, hf32Allowed);
  EXPECT_EQ(half.deviceNs, bf16.deviceNs);
  const double ratio = seconds(fp32) / seconds(half);
  const double chipRatio = 1.0 / runtime::findChip("Ascend910B2").cubeFp32Rate;  // 4
  EXPECT_GT(ratio, 0.85 * chipRatio);
  EXPECT_LE(ratio, chipRatio * 1.01);
  EXPECT_GT(hf32.deviceNs, half.deviceNs);
  EXPECT_LT(hf32.deviceNs, fp32.deviceNs);
  // Convolutions default to HF32 for fp32 (torch_npu allow_hf32 True for conv).
  EXPECT_TRUE(CostOptions{}.allowHf32Conv);
  EXPECT_FALSE(CostOptions{}.allowHf32Matmul);
}

TEST(CostModelMatmul, Int8RunsAtTwiceTheHalfRateAndFp64LeavesTheCube) {
  EXPECT_LT(mm(8192, 8192, 8192, DType::kInt8).deviceNs, mm(8192, 8192, 8192, DType::kFloat16).deviceNs);
  const Cost fp64 = mm(512, 512, 512, DType::kFloat64);
  EXPECT_EQ(fp64.unit, Unit::kAiCpu);  // no fp64 on the Cube (§6.4)
  EXPECT_GT(fp64.deviceNs, 100 * mm(512, 512, 512, DType::kFloat32).deviceNs / 10);
}

TEST(CostModelMatmul, OperandConventionsOfTheFamilyAgree) {
  const int64_t m = 2048, n = 1024, k = 4096;
  const Cost plain = mm(m, n, k);
  // linear(x[4, 512, K], W[N, K], bias) = mm over 2048 rows.
  const Operands linIn{tensor({4, 512, k}), tensor({n, k}), tensor({n})};
  const Operands linOut{tensor({4, 512, n})};
  const Cost linear = price(b2(), OperatorKind::kLinear, linIn, linOut);
  EXPECT_DOUBLE_EQ(linear.flops, plain.flops);
  EXPECT_NEAR(seconds(linear) / seconds(plain), 1.0, 0.05);
  // addmm(bias, A, B) reads the bias too.
  const Operands addIn{tensor({n}), tensor({m, k}), tensor({k, n})};
  const Operands addOut{tensor({m, n})};
  const Cost addmm = price(b2(), OperatorKind::kAddMatmul, addIn, addOut);
  EXPECT_DOUBLE_EQ(addmm.flops, plain.flops);
  EXPECT_GT(addmm.bytes, plain.bytes);
  // bmm of 8 batches does 8x the work.
  const Operands bIn{tensor({8, m, k}), tensor({8, k, n})};
  const Operands bOut{tensor({8, m, n})};
  const Cost bmm = price(b2(), OperatorKind::kBatchedMatmul, bIn, bOut);
  EXPECT_DOUBLE_EQ(bmm.flops, 8 * plain.flops);
  EXPECT_GT(bmm.deviceNs, 6 * plain.deviceNs);
  // A transposed operand (W.t() as a view) costs no copy.
  const OwnedTensor w = tensor({n, k});
  const Operands tIn{tensor({m, k}), transposed(w)};
  const Operands tOut{tensor({m, n})};
  EXPECT_EQ(price(b2(), OperatorKind::kMatmul, tIn, tOut).deviceNs, plain.deviceNs);
  // mv: a matrix times a vector is memory-bound, far below peak.
  const Operands mvIn{tensor({8192, 8192}), tensor({8192})};
  const Operands mvOut{tensor({8192})};
  const Cost mv = price(b2(), OperatorKind::kMatmul, mvIn, mvOut);
  EXPECT_DOUBLE_EQ(mv.flops, 2.0 * 8192 * 8192);
  EXPECT_LT(tflops(mv), 10.0);
}

TEST(CostModelConvolution, ForwardFlopsAndChannelPadding) {
  // ResNet-50 layer1 3x3 conv, batch 32.
  const Operands in{tensor({32, 64, 56, 56}), tensor({64, 64, 3, 3})};
  const Operands out{tensor({32, 64, 56, 56})};
  const Cost conv = price(b2(), OperatorKind::kConvolution, in, out);
  EXPECT_EQ(conv.unit, Unit::kCube);
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 32 * 56 * 56 * 64 * 64 * 9);
  // The 3-channel stem is padded to C0 = 16 (§6.2): it costs about what 16 channels cost.
  const Operands rgbIn{tensor({32, 3, 224, 224}), tensor({64, 3, 7, 7})};
  const Operands c16In{tensor({32, 16, 224, 224}), tensor({64, 16, 7, 7})};
  const Operands stemOut{tensor({32, 64, 112, 112})};
  const Cost rgb = price(b2(), OperatorKind::kConvolution, rgbIn, stemOut);
  const Cost c16 = price(b2(), OperatorKind::kConvolution, c16In, stemOut);
  EXPECT_LT(rgb.flops, c16.flops);
  EXPECT_GT(seconds(rgb), 0.6 * seconds(c16));
  // Depthwise convolutions run on the vector unit.
  const Operands dwIn{tensor({32, 64, 56, 56}), tensor({64, 1, 3, 3})};
  EXPECT_EQ(price(b2(), OperatorKind::kConvolution, dwIn, out).unit, Unit::kVector);
  // fp32 convolutions use HF32 unless disabled.
  const Operands f32In{tensor({32, 64, 56, 56}, DType::kFloat32), tensor({64, 64, 3, 3}, DType::kFloat32)};
  const Operands f32Out{tensor({32, 64, 56, 56}, DType::kFloat32)};
  CostOptions noHf32;
  noHf32.allowHf32Conv = false;
  EXPECT_LT(price(b2(), OperatorKind::kConvolution, f32In, f32Out).deviceNs,
            price(b2(), OperatorKind::kConvolution, f32In, f32Out, Placement::kAiCore, noHf32).deviceNs);
}

TEST(CostModelConvolution, BackwardPricesOnlyTheRequestedGradients) {
  const Operands in{tensor({64, 256, 28, 28}), tensor({64, 128, 56, 56}), tensor({256, 128, 3, 3})};
  const Operands all{tensor({64, 128, 56, 56}), tensor({256, 128, 3, 3}), tensor({256})};
  const Operands weightOnly{absent(), tensor({256, 128, 3, 3}), absent()};
  const Cost both = price(b2(), OperatorKind::kConvolutionBackward, in, all, Placement::kAiCore, {}, {0, 1, 3});
  const Cost three = price(b2(), OperatorKind::kConvolutionBackward, in, all);  // mask from defined outputs
  const Cost fromOutputs = price(b2(), OperatorKind::kConvolutionBackward, in, weightOnly);
  const Cost fromMask = price(b2(), OperatorKind::kConvolutionBackward, in, all, Placement::kAiCore, {}, {0, 1, 2});
  EXPECT_EQ(fromOutputs.deviceNs, fromMask.deviceNs);
  EXPECT_GT(both.deviceNs, fromMask.deviceNs);
  EXPECT_GT(three.deviceNs, both.deviceNs);  // plus the bias reduction
  // Stride-2 3x3: each gradient does the forward's FLOPs.
  const double forwardFlops = 2.0 * 64 * 28 * 28 * 256 * 128 * 9;
  EXPECT_DOUBLE_EQ(both.flops, 2 * forwardFlops);
  EXPECT_DOUBLE_EQ(fromMask.flops, forwardFlops);
  const Cost none = price(b2(), OperatorKind::kConvolutionBackward, in, all, Placement::kAiCore, {}, {0, 1, 0});
  EXPECT_EQ(none.deviceNs, b2().kernelFloorNs());
}

TEST(CostModelAttention, CausalHalvesTheWorkAndBackwardCostsMore) {
  const Operands qkv{tensor({4, 8, 4096, 128}), tensor({4, 8, 4096, 128}), tensor({4, 8, 4096, 128})};
  const Operands out{tensor({4, 8, 4096, 128}), tensor({4, 8, 4096}, DType::kFloat32)};
  const Cost full = price(b2(), OperatorKind::kAttention, qkv, out, Placement::kAiCore, {}, {0});
  const Cost causal = price(b2(), OperatorKind::kAttention, qkv, out, Placement::kAiCore, {}, {1});
  EXPECT_DOUBLE_EQ(full.flops, 4.0 * 4 * 8 * 4096.0 * 4096 * 128);
  EXPECT_NEAR(causal.flops / full.flops, 0.5, 0.01);
  EXPECT_LT(causal.deviceNs, full.deviceNs);
  // BSND layout of the same problem costs the same.
  const Operands bsnd{tensor({4, 4096, 8, 128}), tensor({4, 4096, 8, 128}), tensor({4, 4096, 8, 128})};
  const Cost sameBsnd = price(b2(), OperatorKind::kAttention, bsnd, out, Placement::kAiCore, {},
                              {1, int64_t(AttentionLayout::kBSND)});
  EXPECT_EQ(sameBsnd.flops, causal.flops);
  // BSH needs the head count.
  const Operands bsh{tensor({4, 4096, 1024}), tensor({4, 4096, 1024}), tensor({4, 4096, 1024})};
  const Cost sameBsh = price(b2(), OperatorKind::kAttention, bsh, out, Placement::kAiCore, {},
                             {1, int64_t(AttentionLayout::kBSH), 8});
  EXPECT_EQ(sameBsh.flops, causal.flops);
  const Operands grads{tensor({4, 8, 4096, 128}), tensor({4, 8, 4096, 128}), tensor({4, 8, 4096, 128}),
                       tensor({4, 8, 4096, 128})};
  const Cost backward = price(b2(), OperatorKind::kAttentionBackward, grads, qkv, Placement::kAiCore, {}, {1});
  EXPECT_GT(backward.deviceNs, 3 * causal.deviceNs / 2);
  EXPECT_GT(tflops(causal), 50.0);
  EXPECT_LT(tflops(causal), 354.0);
}

// ---------------------------------------------------------------- Vector

TEST(CostModelVector, LargeElementwiseOpsAreHbmBound) {
  const int64_t n = int64_t(1) << 28;  // 256 Mi elements
  const Operands in{tensor({n}, DType::kFloat32), tensor({n}, DType::kFloat32)};
  const Operands out{tensor({n}, DType::kFloat32)};
  const Cost add = price(b2(), OperatorKind::kElementwise, in, out);
  EXPECT_EQ(add.unit, Unit::kVector);
  EXPECT_DOUBLE_EQ(add.bytes, 12.0 * n);
  const double hbm = add.bytes / b2().rates().hbmBytesPerSecond;
  EXPECT_NEAR(seconds(add), hbm + calibration::kKernelFloorNs * 1e-9, 1e-6);
  // The same for fp16 moves half the bytes, takes about half the time.
  const Operands in16{tensor({n}), tensor({n})};
  const Operands out16{tensor({n})};
  EXPECT_NEAR(seconds(price(b2(), OperatorKind::kElementwise, in16, out16)) / seconds(add), 0.5, 0.01);
}

TEST(CostModelVector, TinyOpsCostTheLaunchFloor) {
  const Operands in{tensor({4}), tensor({4})};
  const Operands out{tensor({4})};
  const Cost tiny = price(b2(), OperatorKind::kElementwise, in, out);
  EXPECT_GE(tiny.deviceNs, b2().kernelFloorNs());
  EXPECT_LT(tiny.deviceNs, b2().kernelFloorNs() + 100);
  EXPECT_EQ(b2().kernelFloorNs(), 5000u);
  // An empty factory still launches a kernel.
  const Operands none{};
  const Operands fill{tensor({0})};
  EXPECT_EQ(price(b2(), OperatorKind::kFactory, none, fill).deviceNs, b2().kernelFloorNs());
}

TEST(CostModelVector, Fp32ComputesAtHalfTheFp16ElementRate) {
  const ChipRates& rates = b2().rates();
  VectorWork work;
  work.elements = 1e9;
  work.opsPerElement = 8;
  work.computeType = DType::kFloat16;
  const double half = estimateVector(rates, work).computeSeconds;
  work.computeType = DType::kFloat32;
  EXPECT_NEAR(estimateVector(rates, work).computeSeconds / half, 2.0, 1e-9);
  work.computeType = DType::kBFloat16;  // computed through fp32
  EXPECT_NEAR(estimateVector(rates, work).computeSeconds / half, 2.0, 1e-9);
  // §2.3: binary fp32 over 48 AIVs at 1.8 GHz ~ 2.8 T elements/s.
  work.opsPerElement = 1;
  work.computeType = DType::kFloat32;
  EXPECT_NEAR(1e9 / estimateVector(rates, work).computeSeconds / 1e12, 2.76, 0.01);
}

TEST(CostModelVector, KindsPriceTheirTraffic) {
  const int64_t rows = 8192, cols = 4096;
  const Operands x{tensor({rows, cols}), tensor({cols}), tensor({cols})};
  const Operands y{tensor({rows, cols}), tensor({rows}, DType::kFloat32), tensor({rows}, DType::kFloat32)};
  const Cost norm = price(b2(), OperatorKind::kNormalization, x, y);
  // Two passes over the input, one write.
  EXPECT_GT(norm.bytes, 3.0 * rows * cols * 2 * 0.99);
  const Operands sIn{tensor({rows, cols})};
  const Operands sOut{tensor({rows, cols})};
  const Cost softmax = price(b2(), OperatorKind::kSoftmax, sIn, sOut);
  const Cost copy = price(b2(), OperatorKind::kDataMovement, sIn, sOut);
  EXPECT_LT(softmax.deviceNs, norm.deviceNs);
  EXPECT_LE(copy.deviceNs, softmax.deviceNs);
  // A transposing copy reads with short bursts.
  const OwnedTensor source = tensor({cols, rows});
  const Operands tIn{transposed(source)};
  const Cost transposing = price(b2(), OperatorKind::kDataMovement, tIn, sOut);
  EXPECT_GT(transposing.deviceNs, copy.deviceNs);
  // Views launch nothing, wherever they are placed.
  EXPECT_EQ(price(b2(), OperatorKind::kView, sIn, sOut).deviceNs, 0u);
  EXPECT_EQ(price(b2(), OperatorKind::kView, sIn, sOut, Placement::kCpuFallback).deviceNs, 0u);
  EXPECT_EQ(price(b2(), OperatorKind::kView, sIn, sOut).unit, Unit::kNone);
  // Gathers read the indexed rows, not the whole table.
  const Operands embIn{tensor({32000, 4096}), tensor({4096}, DType::kInt64)};
  const Operands embOut{tensor({4096, 4096})};
  const Cost embedding = price(b2(), OperatorKind::kIndexing, embIn, embOut);
  EXPECT_LT(embedding.bytes, 32000.0 * 4096 * 2);
  // Sorting takes several passes; an optimizer kernel streams its tensors.
  const Operands sortIn{tensor({64, 65536}, DType::kFloat32)};
  const Operands sortOut{tensor({64, 65536}, DType::kFloat32), tensor({64, 65536}, DType::kInt32)};
  EXPECT_GT(price(b2(), OperatorKind::kSort, sortIn, sortOut).bytes, 4 * 64 * 65536 * 4.0);
  const Operands adamIn{tensor({1 << 24}, DType::kFloat32), tensor({1 << 24}, DType::kFloat32),
                        tensor({1 << 24}, DType::kFloat32), tensor({1 << 24}, DType::kFloat32)};
  const Operands adamOut{tensor({1 << 24}, DType::kFloat32), tensor({1 << 24}, DType::kFloat32),
                         tensor({1 << 24}, DType::kFloat32)};
  const Cost adam = price(b2(), OperatorKind::kOptimizerFused, adamIn, adamOut);
  EXPECT_DOUBLE_EQ(adam.bytes, 28.0 * (1 << 24));
  EXPECT_EQ(adam.unit, Unit::kVector);
}

// ------------------------------------------------- AI CPU and CPU fallback

TEST(CostModelPlacement, AiCpuIsMuchSlowerAndSynchronises) {
  const Operands in{tensor({1 << 20}, DType::kInt64)};
  const Operands out{tensor({1 << 20}, DType::kInt64), tensor({1 << 20}, DType::kInt64)};
  const Cost core = price(b2(), OperatorKind::kSort, in, out);
  const Cost aiCpu = price(b2(), OperatorKind::kSort, in, out, Placement::kAiCpu);
  EXPECT_EQ(aiCpu.unit, Unit::kAiCpu);
  EXPECT_TRUE(aiCpu.synchronizesHost);
  EXPECT_FALSE(core.synchronizesHost);
  EXPECT_GT(aiCpu.deviceNs, 20 * core.deviceNs);
  // Even a tiny AI CPU op pays its scheduling.
  const Operands one{tensor({1}, DType::kInt64)};
  EXPECT_GE(price(b2(), OperatorKind::kIndexing, one, one, Placement::kAiCpu).deviceNs,
            uint64_t(calibration::kAiCpuLaunchNs));
}

TEST(CostModelPlacement, CpuFallbackIncludesBothTransfers) {
  const int64_t n = 1 << 22;
  const Operands in{tensor({n}, DType::kFloat32), tensor({n}, DType::kFloat32)};
  const Operands out{tensor({n}, DType::kFloat32)};
  const Cost fallback = price(b2(), OperatorKind::kElementwise, in, out, Placement::kCpuFallback);
  EXPECT_EQ(fallback.unit, Unit::kCpuFallback);
  EXPECT_TRUE(fallback.synchronizesHost);
  EXPECT_EQ(fallback.hostNs, fallback.deviceNs);
  const uint64_t toHost = b2().deviceToHost(uint64_t(8) * n);
  const uint64_t toDevice = b2().hostToDevice(uint64_t(4) * n, false);
  EXPECT_GT(fallback.deviceNs, toHost + toDevice);
  EXPECT_GT(fallback.deviceNs, 10 * price(b2(), OperatorKind::kElementwise, in, out).deviceNs);
  // A fallback with nothing to copy back pays no transfer for it.
  const Operands none{};
  const Cost reduction = price(b2(), OperatorKind::kReduction, in, none, Placement::kCpuFallback);
  EXPECT_LT(reduction.deviceNs, fallback.deviceNs);
}

// ------------------------------------------------------------ Robustness

TEST(CostModelRobustness, MalformedCallsDoNotCrash) {
  const CostOptions options;
  for (int k = 0; k <= int(OperatorKind::kOther); ++k) {
    const auto kind = OperatorKind(k);
    SCOPED_TRACE(operatorKindName(kind));
    // Nothing at all.
    const Cost empty = b2().price(kind, nullptr, 0, nullptr, 0, Placement::kAiCore, options);
    EXPECT_LT(empty.deviceNs, 100'000u);
    // Negative counts, null arrays.
    b2().price(kind, nullptr, -3, nullptr, -1, Placement::kAiCpu, options, nullptr, -2);
    // Undefined and rank-0 tensors where matrices are expected.
    const Operands odd{absent(), tensor({}), absent(), tensor({0, 5})};
    const Operands oddOut{absent(), tensor({})};
    for (Placement p : {Placement::kAiCore, Placement::kAiCpu, Placement::kCpuFallback}) {
      price(b2(), kind, odd, oddOut, p, options, {-1, -7, 99});
    }
  }
  // A convolution with a nonsensical group count.
  const Operands in{tensor({2, 6, 8, 8}), tensor({6, 3, 3, 3})};
  const Operands out{tensor({2, 6, 6, 6})};
  EXPECT_GT(price(b2(), OperatorKind::kConvolution, in, out, Placement::kAiCore, {}, {0, -4}).deviceNs, 0u);
  EXPECT_GT(price(b2(), OperatorKind::kConvolution, in, out, Placement::kAiCore, {}, {0, 1000}).deviceNs, 0u);
}

// Every constant of the cost model, with the public figure it rests on.
//
// Section numbers (§) refer to shared/reference/ascend-hardware.md. Tags as
// there: [S] secondary source, [U] unverified, [D] derived, [I] inferred by
// npusim (an assumption, stated so it can be replaced by a measurement).
// Chip-specific numbers (cores, clocks, bandwidths) come from the chip files
// through runtime::ChipSpec, not from here.
#pragma once

#include <cstdint>

namespace npusim::perf::calibration {

// ---------------------------------------------------------------- Cube unit
// Base tile of one AI Cube core: a 128x256 fp32 accumulator is 128 KB, the
// whole L0C of a 910B AIC (§1 per-AIC buffers); K advances 64 at a time so
// that A (128x64 fp16, 16 KB) and B (64x256, 32 KB) double-buffer in the
// 64 KB L0A / L0B.
inline constexpr int64_t kBaseTileM = 128;
inline constexpr int64_t kBaseTileN = 256;
inline constexpr int64_t kBaseTileK = 64;
// Cube fractal: M, N, K padded to 16 (§6.5); int8 K to 32 (16x32x16, §2.2).
inline constexpr int64_t kFractal = 16;
inline constexpr int64_t kInt8FractalK = 32;
// Issue cost of one MMAD instruction (one 64-deep K step of a tile) beyond
// its m*k*n/MACs cycles: msKPP measures ~2-3 cycles back-to-back (32x16x128
// in ~18 cycles vs 16 ideal) and up to 24 isolated (§2.3). The best measured
// shape, 328 TFLOPS bf16 (92.7% of 353.9, §3.3 limulidae), bounds the
// per-step cost from below: with the fixpipe drain below, 16 cycles per step
// leave a 128x256 tile at 93-94% of peak. 16 is inside msKPP's range.
inline constexpr double kMmadIssueCycles = 16.0;
// The accumulator leaves L0C through the fixpipe at 128 B/cycle (L0C->GM,
// §2.3). With one L0C buffer the drain does not overlap the next tile.
inline constexpr double kFixpipeBytesPerCycle = 128.0;
inline constexpr double kAccumulatorBytes = 4.0;  // fp32 (int32 for int8)
// Fixed cost of one Cube kernel (launch, tiling, first loads, last drain):
// fitted on the §3.3 sweep, where 1024^3 at 98 TFLOPS is dominated by it;
// consistent with the "~10 us fixed launch/sync overhead" of the A3 study
// (§2.4) and §6.3's 5-10 us per kernel.
inline constexpr double kCubeKernelOverheadNs = 10'000.0;
// Beyond the L2 (192 MB on 910B2), the panels the tiles re-read miss and
// the MMADs wait for them. The stall grows with the overflow (working set /
// L2 - 1) until the working set is three times the L2 (overflow 2), where
// every panel re-read misses and it stops growing. Fitted on the 8192^3 and
// 10240^3 points of all three dtypes of the §3.3 sweep (#109), 7.5% of the
// Cube time per unit of overflow:
//   fp16/bf16 8192^3 (overflow 1.0): 305.5 / 301.2 measured, 311 modelled;
//   fp16/bf16 10240^3 (overflow 2.1, capped at 2): 274.8 / 300.9 measured,
//     293 modelled (fp16 and bf16 have the same bytes and Cube rate, so no
//     dtype-independent mechanism can follow both; the fit sits between);
//   fp32 8192^3 / 10240^3 (overflow 3 / 5, capped): 80.4 / 79.7 measured,
//     75.5 modelled (fp32 does not decline further past 8192^3: the cap).
// A weight gradient (one tile row, K split over the cores) has a small
// working set; a convolution's weights are re-read from the L2 freely.
inline constexpr double kL2OverflowStall = 0.075;
inline constexpr double kL2OverflowCap = 2.0;
// Convolutions lowered to the Cube run below the GEMM of the same shape
// (load3d im2col feeding, 5HD / FRACTAL_Z tiling): per-kernel measurements
// of ResNet-50 on the first-generation 910 (issue 12 of this project, from
// profiler kernel tables) show convolutions about 1.8x slower than the GEMM
// model priced them. No 910B convolution measurement is published; the
// same efficiency is used for every chip [U].
inline constexpr double kConvolutionCubeEfficiency = 1.0 / 1.8;
// HF32 (torch_npu allow_hf32): fp32 operands rounded to a 10-bit mantissa and
// multiplied on the Cube. No public throughput figure; taken as half the
// fp16 rate [I] by analogy with the fractal (fp32/HF32 use K0=8 where fp16
// uses 16, so half the MACs per cycle) and with TF32 on the A100 (half its
// fp16 tensor rate). fp32 itself runs at the chip's cube_fp32_rate (~1/4,
// measured 84.5-87 TFLOPS, §3.3).
inline constexpr double kHf32RateOfFp16 = 0.5;
// Operands reach a core's L1 from the L2 at 110 B/cycle per core
// (AICoreMemoryRates l2_read, 910B1 ini, §2.2; msKPP measures GM->L1 up to
// ~260-280 GB/s = ~150 B/cycle with long bursts, §2.3). A K step needs
// (tileM + tileN) x 64 operand elements; the 128x256 base tile needs 93
// B/cycle and is not limited, narrower tiles (few output channels, a
// skinny M) are. A panel (tile rows x K or K x tile columns) that fits in
// half of the 512 KB L1 stays there while the core walks the other operand.
inline constexpr double kL2ReadBytesPerCyclePerCore = 110.0;
inline constexpr double kL1ResidentPanelBytes = 256.0 * 1024;
// Split-K keeps at least this many K steps per core (below it the partial
// sums cost more than the parallelism gains).
inline constexpr int64_t kMinKStepsPerSplit = 4;

// --------------------------------------------------------------- HBM reach
// What streams from HBM is moved by the AI cores' DMA engines, each at most
// ddr_rate = 32 B/cycle (CANN platform ini, [AICoreMemoryRates] ddr_rate of
// the 910B, §2.2; CANN's own roofline takes HBM B/s = cores x ddr_rate x
// clock). 24 AI cores at 1.8 GHz reach 1.38 TB/s, above the 1.36 the chip
// files allow the HBM (1.6 TB/s x 0.85), so the 910B2 is HBM-bound as
// before; the 20 cores of a 910B3 reach only 1.15 TB/s and stream that much
// slower (ChipRates.cpp). A2 family only: the first-generation 910's ini is
// not quoted.
inline constexpr double kDdrBytesPerCyclePerCore = 32.0;

// ------------------------------------------------------------- Vector unit
// Minimum device time of any kernel: §6.3 working value "~5-10 us per
// kernel on device"; a vector kernel pays it on top of its work.
inline constexpr double kKernelFloorNs = 5'000.0;
// One vector repeat is 256 B (128 fp16 / 64 fp32 elements); binary ops take
// 2 cycles per repeat, unary and scalar-operand ops 1 (§2.3, msKPP).
inline constexpr double kBinaryCyclesPerRepeat = 2.0;
// Vector instructions per element, by instruction class, in binary-op
// equivalents (2 cycles per 256 B repeat = 1): binary and unary ops 1 (a
// unary op takes 1 cycle, but a kernel pairs it with a cast or a move);
// multiply-accumulate (VMLA, 6 cycles/repeat, §2.3) 3; a transcendental
// function (exp, log, tanh, reciprocal) as two VMLA-class polynomial steps,
// 6 [I]; a row reduction folds repeats element-wise (1) and finishes with one
// VREDUCEV2 (~14 cycles) per row, negligible per element. Kernels:
//   activation (sigmoid-based silu/swish, gelu, tanh): exp 6 + add 1 +
//     reciprocal-multiply 3 + multiply 1 = 11;
//   normalisation (layer/RMS norm, batch norm's update): square 1 + sum 1
//     + centre 1 + rsqrt-scale 3 (VMLA) + affine 3 (VMLA) = 9;
//   softmax: max 1 + subtract 1 + exp 6 + sum 1 + scale 1 = 10.
// The softmax count is what the attention loop of issue 12 (1024 x 8192
// fp16 scores, 79.3 us per iteration on a 910B2) allows together with the
// L2 residency of its scores: higher counts push that row past its
// reference, lower ones leave it HBM-bound.
inline constexpr double kOpsElementwise = 1.0;
inline constexpr double kOpsActivation = 11.0;
inline constexpr double kOpsReduction = 1.5;
inline constexpr double kOpsNormalization = 9.0;
inline constexpr double kOpsSoftmax = 10.0;
inline constexpr double kOpsPooling = 1.0;  // per input element (one compare/add per window tap)
inline constexpr double kOpsRandom = 12.0;  // Philox rounds
inline constexpr double kOpsOptimizer = 16.0;  // Adam: moments, bias correction, sqrt, divide
inline constexpr double kOpsIndexing = 2.0;
// Non-unit-stride reads (transposes, strided views) and gathers use short
// bursts; msKPP shows per-core DMA needs long bursts to reach bandwidth
// (§2.3: 7.9 GB/s at 1 burst vs ~187 GB/s at 192). Taken as half of the
// streaming bandwidth [I].
inline constexpr double kStridedBandwidthFraction = 0.5;
// A separate TransData kernel pads an ND operand whose contiguous dimension is
// not a multiple of 16 elements into the fractal format (§6.2): one read and
// one write of the operand.
// bf16 arithmetic on the A2 vector unit goes through fp32 [I]: bf16 is
// priced at the fp32 element rate.

// Fused attention (FlashAttention-style: scores stay on chip) is parallel
// over batch x heads x blocks of query rows, 128 rows per block: the Cube's
// base tile height (kBaseTileM), the block FlashAttentionScore tiles the
// query sequence in [I].
inline constexpr int64_t kFlashQueryBlock = 128;
// Under a sparse_mode the kernel loops, per query block, over one contiguous
// key range (AttentionSparsity.h) in Cube tiles of 128 keys (the 128 x 128
// Cube base block of "FA/FAG算子设计介绍" §2.1, ops-transformer docs); the
// key-tile count is what the block-count tests check, the price follows the
// keys in the range.
inline constexpr int64_t kFlashKeyTile = 128;
// Fused attention (FlashAttention-style: scores stay on chip). Vector work
// per score element: scale, row max, subtract, exp, row sum, cast, and the
// rescale of the running output, ~10 binary-op equivalents in fp32 [I]. The
// backward recomputes the scores and forms dS: 2x the vector work; its Cube
// work is 5 matmuls against the forward's 2 (2.5x).
// Checked (not fitted) against torch_npu's npu_fusion_attention forward on a
// 910B2, fp16, one head of 128, no mask, S0 = S1 (pto-isa's "910B2 Multi-Core
// Comparison", hw-native-sys/pto-isa kernels/manual/common/flash_atten/
// README.md @ 9e050352009a): the forward is Vector-bound at 10 ops per score,
// and 4096 / 8192 / 16384 / 32768 estimate 117 / 299 / 1118 / 4031 us against
// 118 / 353 / 1118 / 3646 measured (-1%, -15%, 0%, +11%). No backward
// (FlashAttentionScoreGrad) time is published; its factors stay [I].
inline constexpr double kFlashOpsPerScore = 10.0;
inline constexpr double kFlashBackwardVectorFactor = 2.0;
inline constexpr double kFlashBackwardCubeFactor = 2.5;

// ------------------------------------------ Communication alongside compute
// A collective overlapped with compute on the same chip hides only part of
// the shorter of the two: pto-isa's fused GEMM + all-reduce on 8 Ascend 910B
// (24 compute blocks; hw-native-sys/pto-isa kernels/manual/a2a3/gemm_ar/
// README.md @ 3186c381bd49, M 5416 K 6144 N 1408 fp16) measures compute
// 371.6 us and all-reduce 437.3 us run one after the other (808.9 us), and
// 560.6 us pipelined: 248.4 us hidden, 66.8% of the shorter phase (the GEMM
// finished on time, 367.2 us; the all-reduce ran slower while it shared the
// chip). Used for MC2's fused kernels, Megatron's asynchronous tensor-parallel
// collectives behind a GEMM and overlapped data-parallel reductions
// (CollectiveModel.h exposedCommunicationSeconds).
inline constexpr double kComputeCommunicationOverlap = 0.668;

// ------------------------------------------------------------------ AI CPU
// AI CPU kernels run on the SoC's ARM cores (ai_cpu_cnt 6-7, §2.2), "orders
// of magnitude slower with extra scheduling latency" (§6.1). Chosen [I]:
// 50 us per kernel for scheduling and the stream synchronisation it entails
// (low end of §6.3's 50-150 us host-device sync), then 2 GB/s and 2 GFLOP/s
// per AI CPU core (scalar code on embedded ARM cores), all cores used.
inline constexpr double kAiCpuLaunchNs = 50'000.0;
inline constexpr double kAiCpuBytesPerSecondPerCore = 2e9;
inline constexpr double kAiCpuFlopsPerSecondPerCore = 2e9;

// ------------------------------------------------------------ CPU fallback
// An operator the real stack does not support runs on the host: inputs
// copied to the host, the CPU kernel, outputs copied back (torch_npu's
// fallback). Host compute [I]: 10 GB/s streaming and 50 GFLOP/s (a few
// aarch64 cores of the Atlas 800T A2 host running ATen's CPU kernels), plus
// 20 us for the fallback path itself (the warning check, CPU dispatch).
inline constexpr double kHostBytesPerSecond = 10e9;
inline constexpr double kHostFlopsPerSecond = 50e9;
inline constexpr double kCpuFallbackOverheadNs = 20'000.0;

// -------------------------------------------------------------------- PCIe
// Host<->device copies over PCIe 4.0 x16 (pcie_bandwidth_gbps, 32 GB/s per
// direction theoretical). Pinned memory is DMA'd directly: 80% of the link
// (25.6 GB/s; §5 quotes "PCIe ~28 GB/s") after 8 us of setup and completion.
// Pageable memory is staged through a pinned bounce buffer by a host memcpy:
// 40% of the link (12.8 GB/s) after 15 us [I] (the same ratio as CUDA's
// pageable vs pinned copies).
inline constexpr double kPinnedPcieFraction = 0.80;
inline constexpr double kPageablePcieFraction = 0.40;
inline constexpr double kPinnedCopyLatencyNs = 8'000.0;
inline constexpr double kPageableCopyLatencyNs = 15'000.0;

// ---------------------------------------------------------- Host dispatch
// Host time of launching one operator in eager mode (§6.3: "host eager
// dispatch ~15-40 us per op"; GPU comparison 3-7 us). At TASK_QUEUE_ENABLE=1
// (the default) a loop of four small operators (q @ k^T, x scale, softmax,
// @ v) measures 60-65 us per iteration on a 910B2 with device work well
// below that (issue 12's attention-loop reference): 15 us per operator.
// TASK_QUEUE_ENABLE=0 launches synchronously on the calling thread (upper
// part of §6.3's range) [I]; 2 also moves part of the first stage to the
// queue's thread (torch_npu recommends it) [I].
inline constexpr double kDispatchSynchronousNs = 35'000.0;
inline constexpr double kDispatchTaskQueueNs = 15'000.0;
inline constexpr double kDispatchTaskQueueLevel2Ns = 13'000.0;
// A view or metadata-only operator launches nothing: ATen's own overhead.
inline constexpr double kDispatchViewNs = 3'000.0;
// A fused attention operator (FlashAttentionScore, FusedInferAttentionScore
// and their gradients) does more host work per launch than a simple one: the
// tiling of its query and key blocks, masks and sequence-length arguments.
// In pto-isa's torch_jit harness on a 910B2 (demos/torch_jit/flash_atten/
// fa_benchmark.py: 50 back-to-back calls between two events after 10 warm-up
// calls; table in demos/torch_jit/flash/README.md, zouzias/pto-isa-mirror @
// 8d8c14a80f21), npu_fused_infer_attention_score on one head of 128 takes
// 67.1-80.1 us per call over the 15 shapes whose device work is well below
// that, where the same harness's four-operator attention loop takes 60 us
// (15 us per operator, above): a fused attention launch costs about 67 us,
// 52 us more than a simple operator (the minimum; the median is 70.5 us).
// The gradient's host work is taken to be the same [I].
inline constexpr double kDispatchAttentionExtraNs = 52'000.0;

}  // namespace npusim::perf::calibration

// The Cube unit's time for one (batched) matrix multiplication
// C[b] = A[b] (m x k) * B[b] (k x n): tiles over the AI Cube cores, waves,
// fractal padding, per-instruction overheads, the L2 and the HBM roofline.
// Convolutions and attention are priced as the GEMMs they lower to.
#pragma once

#include <cstdint>

#include "perf/ChipRates.h"

namespace npusim::perf {

struct GemmShape {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// Bytes the kernel moves through HBM at least once (compulsory traffic).
struct GemmTraffic {
  double bytesA = 0;
  double bytesB = 0;
  double bytesOut = 0;    // written
  double bytesOther = 0;  // bias, the C of addmm/baddbmm
};

struct GemmOptions {
  CubePrecision precision = CubePrecision::kHalf;
  int operandBytes = 2;  // bytes per operand element (fp16/bf16 2, fp32/HF32 4, int8 1)
  // L2 bytes fetched per GEMM operand element, relative to the element: an
  // im2col operand of a convolution is built in L1 from the activation by the
  // load3d instruction, so a 3x3 kernel fetches 1/9 of its GEMM operand.
  double fetchScaleA = 1.0;
  double fetchScaleB = 1.0;
  // Fraction of each operand read from HBM: 0 when a recent kernel left it
  // in the L2 (§2.2 L2 residency), 1 otherwise.
  double hbmFractionA = 1.0;
  double hbmFractionB = 1.0;
  // The accumulator drain overlaps the next tile (double-buffered L0C, as a
  // fused attention kernel's smaller score tiles allow).
  bool drainOverlapped = false;
};

struct GemmEstimate {
  double seconds = 0;        // fixed kernel overhead + max(cube, memory)
  double cubeSeconds = 0;    // tiles in waves on the cube cores, L2 penalty included
  double memorySeconds = 0;  // compulsory HBM traffic at achievable bandwidth
  double flops = 0;          // useful: 2*b*m*n*k
  double paddedFlops = 0;    // what the Cube executes after fractal padding
  double bytes = 0;          // HBM traffic
  double l2Penalty = 1;    // Cube time stretched by MMADs stalling on L2 misses
  bool feedBound = false;  // a K step waits for its operands rather than the MMAD
  int64_t tileM = 0;
  int64_t tileN = 0;
  int64_t kSplit = 1;
  int64_t tiles = 0;  // including the K splits
  int64_t waves = 0;
};

GemmEstimate estimateGemm(const ChipRates& rates, const GemmShape& shape, const GemmTraffic& traffic,
                          const GemmOptions& options) noexcept;

}  // namespace npusim::perf

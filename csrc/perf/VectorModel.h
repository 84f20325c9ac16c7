// The Vector unit's time for a memory-streaming kernel: bytes through HBM
// against the AI Vector cores' element throughput; the larger wins (§2.3:
// element-wise ops are HBM-bound unless tiny).
#pragma once

#include "perf/ChipRates.h"
#include "perf/Types.h"

namespace npusim::perf {

struct VectorWork {
  double bytes = 0;              // HBM traffic (reads + writes)
  double l2Bytes = 0;            // reads served by the L2 (operands a recent kernel left there)
  double elements = 0;           // elements the vector unit processes
  double opsPerElement = 1;      // binary-op equivalents per element
  DType computeType = DType::kFloat16;
  double bandwidthFraction = 1;  // < 1 for strided or gathered access
};

struct VectorEstimate {
  double seconds = 0;  // max(memory, compute); no kernel floor
  double memorySeconds = 0;
  double computeSeconds = 0;
};

VectorEstimate estimateVector(const ChipRates& rates, const VectorWork& work) noexcept;

// Elements of `type` in one 256 B vector repeat; bf16 counts as fp32 (the A2
// vector unit computes bf16 through fp32 [I]).
double elementsPerRepeat(const ChipRates& rates, DType type) noexcept;

}  // namespace npusim::perf

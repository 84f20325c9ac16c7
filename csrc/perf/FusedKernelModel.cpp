#include "perf/FusedKernelModel.h"

#include <algorithm>
#include <cmath>

#include "perf/Calibration.h"
#include "perf/VectorModel.h"

namespace npusim::perf {

namespace cal = calibration;

bool fusedCubePrecision(DType type, CubePrecision& precision, int& operandBytes) noexcept {
  switch (type) {
    case DType::kFloat16:
    case DType::kBFloat16:
      precision = CubePrecision::kHalf;
      operandBytes = 2;
      return true;
    case DType::kFloat32:
      precision = CubePrecision::kFloat32;
      operandBytes = 4;
      return true;
    case DType::kInt8:
      precision = CubePrecision::kInt8;
      operandBytes = 1;
      return true;
    default: return false;
  }
}

FusedKernelCost priceFusedKernel(const ChipRates& rates, const FusedKernelWork& work) noexcept {
  FusedKernelCost cost;
  // The products run back to back on the same cores inside the one kernel;
  // their operands stay on chip (the compulsory traffic is counted once below).
  const GemmOptions onChip{work.precision, work.operandBytes, 1.0, 1.0, true};
  for (int i = 0; i < work.gemmCount; ++i) {
    const GemmShape& shape = work.gemms[i];
    if (shape.batch <= 0 || shape.m <= 0 || shape.n <= 0 || shape.k <= 0) continue;
    const GemmEstimate gemm = estimateGemm(rates, shape, GemmTraffic{}, onChip);
    cost.cubeSeconds += gemm.cubeSeconds;
    cost.flops += gemm.flops;
  }
  const double fraction = std::clamp(work.cubeFraction, 0.0, 1.0);
  cost.cubeSeconds *= fraction;
  cost.flops *= fraction;
  if (work.vectorElements > 0) {
    VectorWork vector;
    vector.elements = work.vectorElements;
    vector.opsPerElement = work.opsPerElement;
    vector.computeType = work.computeType;
    cost.vectorSeconds = estimateVector(rates, vector).computeSeconds;
  }
  if (work.parallelBlocks > 0) {
    // Blocks go to the cores in waves: 1,024 blocks on 24 cores take 43
    // waves, 2.5% more than an even spread; 8 blocks leave 16 cores idle.
    const double cores = double(std::max(1, rates.cubeCores));
    const double waves = std::ceil(work.parallelBlocks / cores);
    const double quantisation = waves * cores / work.parallelBlocks;
    cost.cubeSeconds *= quantisation;
    cost.vectorSeconds *= quantisation;
  }
  cost.bytes = std::max(0.0, work.hbmBytes);
  cost.memorySeconds = rates.hbmBytesPerSecond > 0 ? cost.bytes / rates.hbmBytesPerSecond : 0;
  const bool hasCube = cost.flops > 0;
  // A kernel with Cube work pays the Cube kernel's setup; a Vector-only kernel the plain floor.
  const double overhead = (hasCube ? cal::kCubeKernelOverheadNs : cal::kKernelFloorNs) * 1e-9;
  const double busy = std::max({cost.cubeSeconds, cost.vectorSeconds, cost.memorySeconds});
  cost.seconds = hasCube ? overhead + busy : std::max(overhead, busy);
  cost.unit = hasCube && cost.cubeSeconds >= cost.vectorSeconds ? Unit::kCube : Unit::kVector;
  return cost;
}

}  // namespace npusim::perf

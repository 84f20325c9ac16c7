#include "perf/DropoutKernelModel.h"

#include "perf/Calibration.h"
#include "perf/VectorModel.h"

namespace npusim::perf {

namespace {
constexpr int64_t kBitsPerBlock = 128;  // the mask is whole 128-bit blocks
constexpr int64_t kBitsPerByte = 8;
}  // namespace

int64_t dropoutBitMaskBytes(int64_t elements) noexcept {
  if (elements <= 0) return 0;
  return (elements + kBitsPerBlock - 1) / kBitsPerBlock * kBitsPerBlock / kBitsPerByte;
}

FusedKernelCost priceDropoutMaskGeneration(const ChipRates& rates, int64_t elements) noexcept {
  VectorWork work;
  work.elements = double(elements);
  work.opsPerElement = calibration::kOpsRandom;
  work.computeType = DType::kUInt8;  // one decision per element, as a one-byte mask is priced
  work.bytes = double(dropoutBitMaskBytes(elements));  // written once; nothing is read
  const VectorEstimate estimate = estimateVector(rates, work);
  FusedKernelCost cost;
  cost.seconds = calibration::kKernelFloorNs * 1e-9 + estimate.seconds;
  cost.vectorSeconds = estimate.computeSeconds;
  cost.memorySeconds = estimate.memorySeconds;
  cost.bytes = work.bytes;
  cost.unit = Unit::kVector;
  return cost;
}

}  // namespace npusim::perf

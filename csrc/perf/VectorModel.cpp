#include "perf/VectorModel.h"

#include <algorithm>

#include "perf/Calibration.h"

namespace npusim::perf {

double elementsPerRepeat(const ChipRates& rates, DType type) noexcept {
  const int bytes = type == DType::kBFloat16 ? 4 : elementSize(type);
  return rates.vectorBytesPerRepeat / double(bytes);
}

VectorEstimate estimateVector(const ChipRates& rates, const VectorWork& work) noexcept {
  VectorEstimate estimate;
  const double fraction = work.bandwidthFraction > 0 ? work.bandwidthFraction : 1.0;
  estimate.memorySeconds = work.bytes / (rates.hbmBytesPerSecond * fraction);
  if (work.l2Bytes > 0 && rates.l2ReadBytesPerSecond > 0) {
    estimate.memorySeconds += work.l2Bytes / (rates.l2ReadBytesPerSecond * fraction);
  }
  // §2.3: a binary op takes 2 cycles per 256 B repeat on each AIV.
  const double repeats = work.elements / elementsPerRepeat(rates, work.computeType);
  const double cycles = repeats * work.opsPerElement * calibration::kBinaryCyclesPerRepeat;
  estimate.computeSeconds = cycles / (double(std::max(1, rates.vectorCores)) * rates.clockHz);
  estimate.seconds = std::max(estimate.memorySeconds, estimate.computeSeconds);
  return estimate;
}

}  // namespace npusim::perf

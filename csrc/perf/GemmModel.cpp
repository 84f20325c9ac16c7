#include "perf/GemmModel.h"

#include <algorithm>

#include "perf/Calibration.h"

namespace npusim::perf {
namespace {

constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

}  // namespace

GemmEstimate estimateGemm(const ChipRates& rates, const GemmShape& shape, const GemmTraffic& traffic,
                          const GemmOptions& options) noexcept {
  namespace cal = calibration;
  GemmEstimate estimate;
  estimate.bytes = traffic.bytesA + traffic.bytesB + traffic.bytesOut + traffic.bytesOther;
  estimate.memorySeconds = estimate.bytes / rates.hbmBytesPerSecond;
  if (shape.batch <= 0 || shape.m <= 0 || shape.n <= 0 || shape.k <= 0) {
    estimate.seconds = cal::kCubeKernelOverheadNs * 1e-9 + estimate.memorySeconds;
    return estimate;
  }
  const int64_t cores = std::max(1, rates.cubeCores);
  estimate.flops = 2.0 * double(shape.batch) * double(shape.m) * double(shape.n) * double(shape.k);

  // Fractal padding (§6.5): M, N, K to 16; int8 K to 32.
  const int64_t kAlign = options.precision == CubePrecision::kInt8 ? cal::kInt8FractalK : cal::kFractal;
  const int64_t mPadded = roundUp(shape.m, cal::kFractal);
  const int64_t nPadded = roundUp(shape.n, cal::kFractal);
  const int64_t kPadded = roundUp(shape.k, kAlign);
  estimate.paddedFlops = 2.0 * double(shape.batch) * double(mPadded) * double(nPadded) * double(kPadded);

  // Output tiles; a problem with fewer tiles than cores gets smaller tiles
  // (down to one fractal) so that every core has work.
  int64_t tileM = std::min(cal::kBaseTileM, mPadded);
  int64_t tileN = std::min(cal::kBaseTileN, nPadded);
  auto tileCount = [&] { return shape.batch * ceilDiv(mPadded, tileM) * ceilDiv(nPadded, tileN); };
  int64_t tiles = tileCount();
  while (tiles < cores) {
    if (tileN >= tileM && tileN > cal::kFractal) {
      tileN = roundUp(ceilDiv(tileN, 2), cal::kFractal);
    } else if (tileM > cal::kFractal) {
      tileM = roundUp(ceilDiv(tileM, 2), cal::kFractal);
    } else {
      break;
    }
    tiles = tileCount();
  }
  // Still too few tiles (a long K, as in a weight gradient): split K.
  const int64_t kSteps = ceilDiv(kPadded, cal::kBaseTileK);
  int64_t kSplit = 1;
  if (tiles < cores) {
    kSplit = std::clamp<int64_t>(cores / tiles, 1, std::max<int64_t>(1, kSteps / cal::kMinKStepsPerSplit));
  }
  const int64_t kPerTile = roundUp(ceilDiv(kPadded, kSplit), kAlign);
  const int64_t stepsPerTile = ceilDiv(kPerTile, cal::kBaseTileK);

  // One tile: its MMADs at the precision's MAC rate, the issue overhead of
  // each (§2.3), and the drain of the accumulator through the fixpipe.
  const double macs = rates.macsPerCycle(options.precision);
  double tileCycles = double(tileM) * double(tileN) * double(kPerTile) / macs +
                      double(stepsPerTile) * cal::kMmadIssueCycles;
  if (!options.drainOverlapped) {
    tileCycles += double(tileM) * double(tileN) * cal::kAccumulatorBytes / cal::kFixpipeBytesPerCycle;
  }
  const int64_t totalTiles = tiles * kSplit;
  const int64_t waves = ceilDiv(totalTiles, cores);  // wave quantisation (§6.5)
  double cubeSeconds = double(waves) * tileCycles / rates.clockHz;

  // Operands beyond the L2 are re-read from HBM (§3.3 decline above 4K).
  const double perBatchA = traffic.bytesA / double(shape.batch);
  const double perBatchB = traffic.bytesB / double(shape.batch);
  const double workingSet = perBatchA + perBatchB + traffic.bytesOut / double(shape.batch);
  const double operandSum = perBatchA + perBatchB;
  const double balance = operandSum > 0 ? 2.0 * std::min(perBatchA, perBatchB) / operandSum : 0.0;
  const double overflow = std::max(0.0, workingSet / rates.l2Bytes - 1.0);
  estimate.l2Penalty = 1.0 + cal::kL2OverflowSlope * overflow * balance;
  cubeSeconds *= estimate.l2Penalty;

  // Split K writes fp32 partial sums and reads them back to reduce them.
  if (kSplit > 1) {
    const double partials = double(kSplit) * double(shape.batch) * double(shape.m) * double(shape.n) * 4.0;
    estimate.bytes += 2.0 * partials;
    estimate.memorySeconds = estimate.bytes / rates.hbmBytesPerSecond;
  }

  estimate.cubeSeconds = cubeSeconds;
  estimate.tileM = tileM;
  estimate.tileN = tileN;
  estimate.kSplit = kSplit;
  estimate.tiles = totalTiles;
  estimate.waves = waves;
  estimate.seconds = cal::kCubeKernelOverheadNs * 1e-9 + std::max(estimate.cubeSeconds, estimate.memorySeconds);
  return estimate;
}

}  // namespace npusim::perf

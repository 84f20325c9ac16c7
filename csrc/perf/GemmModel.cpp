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
  // An operand a recent kernel left in the L2 is not fetched from HBM again
  // (it reaches the cores at the L2 feed rate modelled per tile below).
  const double hbmA = traffic.bytesA * options.hbmFractionA, hbmB = traffic.bytesB * options.hbmFractionB;
  estimate.bytes = hbmA + hbmB + traffic.bytesOut + traffic.bytesOther;
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

  // Output tiles of at most 128x256, balanced over each dimension (576
  // columns make three tiles of 192, not 256+256+64).
  auto balancedTile = [](int64_t padded, int64_t base) {
    const int64_t count = ceilDiv(padded, base);
    return roundUp(ceilDiv(padded, count), cal::kFractal);
  };
  int64_t tileM = balancedTile(mPadded, cal::kBaseTileM);
  int64_t tileN = balancedTile(nPadded, cal::kBaseTileN);
  auto tileCount = [&] { return shape.batch * ceilDiv(mPadded, tileM) * ceilDiv(nPadded, tileN); };
  int64_t tiles = tileCount();
  // Fewer tiles than cores: first split a long K (a weight gradient), then
  // shrink the tiles (down to one fractal) so that every core has work.
  const int64_t kSteps = ceilDiv(kPadded, cal::kBaseTileK);
  int64_t kSplit = 1;
  if (tiles < cores) {
    kSplit = std::clamp<int64_t>(cores / tiles, 1, std::max<int64_t>(1, kSteps / cal::kMinKStepsPerSplit));
  }
  while (tiles * kSplit < cores) {
    if (tileN >= tileM && tileN > cal::kFractal) {
      tileN = roundUp(ceilDiv(tileN, 2), cal::kFractal);
    } else if (tileM > cal::kFractal) {
      tileM = roundUp(ceilDiv(tileM, 2), cal::kFractal);
    } else {
      break;
    }
    tiles = tileCount();
  }
  const int64_t kPerTile = roundUp(ceilDiv(kPadded, kSplit), kAlign);
  const int64_t stepsPerTile = ceilDiv(kPerTile, cal::kBaseTileK);

  // One tile: its MMADs at the precision's MAC rate, the issue overhead of
  // each (§2.3), and the drain of the accumulator through the fixpipe.
  const double macs = rates.macsPerCycle(options.precision);
  const double mmadCycles = double(tileM) * double(tileN) * double(kPerTile) / macs +
                            double(stepsPerTile) * cal::kMmadIssueCycles;
  const int64_t totalTiles = tiles * kSplit;
  const int64_t waves = ceilDiv(totalTiles, cores);  // wave quantisation (§6.5)
  // The operands of those MMADs arrive from the L2 at a per-core rate. A
  // panel small enough to stay in L1 is fetched once per core and shared by
  // the core's successive tiles (one per wave); the other panel every tile.
  const double elementBytes = double(std::max(1, options.operandBytes));
  const double rowsA = double(tileM) * options.fetchScaleA, rowsB = double(tileN) * options.fetchScaleB;
  const bool aResident = rowsA * double(kPerTile) * elementBytes <= cal::kL1ResidentPanelBytes;
  const bool bResident = rowsB * double(kPerTile) * elementBytes <= cal::kL1ResidentPanelBytes;
  double fetchedRows = 0;
  if (aResident && bResident) {
    fetchedRows = (rowsA + rowsB) / double(waves);
  } else if (aResident || bResident) {
    fetchedRows = aResident ? rowsB + rowsA / double(waves) : rowsA + rowsB / double(waves);
  } else {
    fetchedRows = rowsA + rowsB;
  }
  const double fetchCycles = fetchedRows * double(kPerTile) * elementBytes / cal::kL2ReadBytesPerCyclePerCore;
  estimate.feedBound = fetchCycles > mmadCycles;
  double tileCycles = std::max(mmadCycles, fetchCycles);
  if (!options.drainOverlapped) {
    tileCycles += double(tileM) * double(tileN) * cal::kAccumulatorBytes / cal::kFixpipeBytesPerCycle;
  }
  double cubeSeconds = double(waves) * tileCycles / rates.clockHz;

  // A working set beyond the L2 makes panel re-reads miss, and the cores'
  // MMADs stall on them (§3.3 decline above 4K; Calibration.h).
  const double workingSet = (traffic.bytesA + traffic.bytesB + traffic.bytesOut) / double(shape.batch);
  const double overflow = std::clamp(workingSet / rates.l2Bytes - 1.0, 0.0, cal::kL2OverflowCap);
  estimate.l2Penalty = 1.0 + rates.l2OverflowStall * overflow;
  cubeSeconds *= estimate.l2Penalty;

  // Split K writes fp32 partial sums and reads them back to reduce them.
  if (kSplit > 1) {
    const double partials = double(kSplit) * double(shape.batch) * double(shape.m) * double(shape.n) * 4.0;
    estimate.bytes += 2.0 * partials;
    estimate.memorySeconds += 2.0 * partials / rates.hbmBytesPerSecond;
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

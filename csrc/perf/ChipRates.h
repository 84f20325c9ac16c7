// The rates the cost formulas use, derived once from a chip's specification.
#pragma once

#include <cstdint>

#include "runtime/ChipSpec.h"

namespace npusim::perf {

// How the Cube multiplies: the operand precision decides the MAC rate.
enum class CubePrecision { kHalf /* fp16, bf16 */, kFloat32, kHf32, kInt8 };

struct ChipRates {
  int cubeCores = 0;
  int vectorCores = 0;
  int aiCpuCores = 0;
  double clockHz = 0;              // cube_freq; the AIVs are taken to run at the same clock [U] (§2.3)
  double halfMacsPerCycle = 0;     // per core
  double int8MacsPerCycle = 0;     // per core
  double fp32RateOfHalf = 0;       // cube_fp32_rate
  double vectorBytesPerRepeat = 0; // 256 B per repeat per AIV
  double hbmBytesPerSecond = 0;    // achievable: nominal x efficiency, at most what the cores' DMA reaches
  double l2Bytes = 0;
  double l2ReadBytesPerSecond = 0;
  double l2OverflowStall = 0;      // GEMM stall per unit of L2 overflow (Calibration.h)
  double pcieBytesPerSecond = 0;   // per direction, theoretical

  static ChipRates fromChip(const runtime::ChipSpec& chip);

  double macsPerCycle(CubePrecision precision) const noexcept;
  // Peak dense FLOP/s of the whole Cube at this precision.
  double peakFlops(CubePrecision precision) const noexcept {
    return double(cubeCores) * macsPerCycle(precision) * 2.0 * clockHz;
  }
};

}  // namespace npusim::perf

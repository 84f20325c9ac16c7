#include "perf/ChipRates.h"

#include <algorithm>

#include "perf/Calibration.h"

namespace npusim::perf {

ChipRates ChipRates::fromChip(const runtime::ChipSpec& chip) {
  ChipRates rates;
  rates.cubeCores = chip.cubeCores > 0 ? chip.cubeCores : 1;
  rates.vectorCores = chip.vectorCores > 0 ? chip.vectorCores : 1;
  rates.aiCpuCores = chip.aiCpuCores > 0 ? chip.aiCpuCores : 1;
  rates.clockHz = (chip.cubeFrequencyMhz > 0 ? chip.cubeFrequencyMhz : 1000.0) * 1e6;
  rates.halfMacsPerCycle = chip.cubeFp16MacsPerCycle > 0 ? chip.cubeFp16MacsPerCycle : 4096;
  rates.int8MacsPerCycle = chip.cubeInt8MacsPerCycle > 0 ? chip.cubeInt8MacsPerCycle : 2 * rates.halfMacsPerCycle;
  rates.fp32RateOfHalf = chip.cubeFp32Rate > 0 ? chip.cubeFp32Rate : 0.25;
  rates.vectorBytesPerRepeat = chip.vectorBytesPerCycle > 0 ? chip.vectorBytesPerCycle : 256;
  const double efficiency = chip.hbmBandwidthEfficiency > 0 ? chip.hbmBandwidthEfficiency : 0.85;
  rates.hbmBytesPerSecond = (chip.hbmBandwidthGbps > 0 ? chip.hbmBandwidthGbps : 1600.0) * 1e9 * efficiency;
  if (chip.chipFamily == "A2") {
    // The cores' DMA engines bound what they can stream (Calibration.h kDdrBytesPerCyclePerCore).
    const double reach = calibration::kDdrBytesPerCyclePerCore * double(rates.cubeCores) * rates.clockHz;
    rates.hbmBytesPerSecond = std::min(rates.hbmBytesPerSecond, reach);
  }
  rates.l2Bytes = chip.l2CacheBytes > 0 ? double(chip.l2CacheBytes) : 192.0 * 1024 * 1024;
  rates.l2ReadBytesPerSecond = calibration::kL2ReadBytesPerCyclePerCore * double(rates.cubeCores) * rates.clockHz;
  // Measured on the A2 family only; the first-generation 910's 32 MB L2 has
  // no GEMM sweep to fit it on, so no stall is invented for it.
  rates.l2OverflowStall = chip.chipFamily == "A1" ? 0.0 : calibration::kL2OverflowStall;
  rates.pcieBytesPerSecond = (chip.pcieBandwidthGbps > 0 ? chip.pcieBandwidthGbps : 32.0) * 1e9;
  return rates;
}

double ChipRates::macsPerCycle(CubePrecision precision) const noexcept {
  switch (precision) {
    case CubePrecision::kHalf: return halfMacsPerCycle;
    case CubePrecision::kFloat32: return halfMacsPerCycle * fp32RateOfHalf;
    case CubePrecision::kHf32: return halfMacsPerCycle * calibration::kHf32RateOfFp16;
    case CubePrecision::kInt8: return int8MacsPerCycle;
  }
  return halfMacsPerCycle;
}

}  // namespace npusim::perf

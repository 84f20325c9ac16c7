// Specifications of the simulated Ascend chips.
//
// The numbers live in data files (python/npusim/data/chips/*.ini), each naming
// its public sources; the build embeds them in the library. A user may add or
// override chips with files in the directory named by NPUSIM_CHIP_DIR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace npusim::runtime {

struct ChipSpec {
  std::string socName;        // "Ascend910B2": torch.npu.get_device_name()
  std::string npuSmiName;     // "910B2": the Name column of npu-smi
  int socVersionId = 0;       // torch_npu's SocVersion enum value
  std::string chipFamily;     // "A2", "A1"
  int cubeCores = 0;
  int vectorCores = 0;
  int aiCpuCores = 0;
  double cubeFrequencyMhz = 0;
  int cubeFp16MacsPerCycle = 0;  // per core
  int cubeInt8MacsPerCycle = 0;  // per core
  double cubeFp32Rate = 0;       // fp32 matmul rate relative to fp16
  int vectorBytesPerCycle = 0;   // per vector core
  uint64_t hbmBytes = 0;         // physical HBM (npu-smi total)
  uint64_t totalMemoryBytes = 0; // what the framework may use (torch.npu total_memory)
  double hbmBandwidthGbps = 0;   // GB/s, nominal
  double hbmBandwidthEfficiency = 0;
  uint64_t l2CacheBytes = 0;
  double pcieBandwidthGbps = 0;
  double hccsLinkBandwidthGbps = 0;
  int intraNodePeers = 0;
  double roceBandwidthGbps = 0;
  std::string deviceCapability;  // "9.0"

  // Peak dense fp16/bf16 throughput in FLOP/s: cores x MACs x 2 x clock.
  double peakFp16Flops() const {
    return double(cubeCores) * cubeFp16MacsPerCycle * 2.0 * cubeFrequencyMhz * 1e6;
  }
};

struct EmbeddedChipFile {
  const char* fileName;
  const char* text;
};

// Generated at build time from the data files.
const std::vector<EmbeddedChipFile>& embeddedChipFiles();

// Parses one chip file. Throws ConfigError naming `origin` and the line for a
// malformed line, an unknown key, a bad number or a missing key.
ChipSpec parseChipSpec(std::string_view text, std::string_view origin);

// All known chips: the embedded ones, then those of NPUSIM_CHIP_DIR (which
// replace an embedded chip of the same soc_name).
const std::vector<ChipSpec>& knownChips();

// The chip with this SoC name ("Ascend910B2"); the npu-smi name ("910B2") is
// accepted too. Throws ConfigError listing the known names otherwise.
const ChipSpec& findChip(std::string_view name);

// The chip chosen by NPUSIM_SOC, Ascend910B2 when unset.
const ChipSpec& chipFromEnvironment();

}  // namespace npusim::runtime

#include "runtime/ChipSpec.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "runtime/ConfigFile.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Error.h"

namespace npusim::runtime {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::string where(std::string_view origin, int line, std::string_view key) {
  return "chip file " + printableText(origin, 4096) + " line " + std::to_string(line) + ": " + std::string(key);
}

// What a field accepts; every chip quantity is finite, and most are positive
// (a zero clock or MAC count would divide by zero in the cost model).
enum class Range { kPositive, kNonNegative, kFraction };

template <typename T>
T parseNumber(std::string_view value, std::string_view origin, int line, std::string_view key, Range range) {
  T result{};
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    throw ConfigError(where(origin, line, key) + " = \"" + printableText(value) + "\" is not a valid number");
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(result)) {
      throw ConfigError(where(origin, line, key) + " = " + printableText(value) + " is not a finite number");
    }
  }
  const bool ok = range == Range::kNonNegative ? result >= T{0}
                  : range == Range::kFraction  ? result > T{0} && result <= T{1}
                                               : result > T{0};
  if (!ok) {
    const char* expected = range == Range::kNonNegative ? "a number >= 0"
                           : range == Range::kFraction  ? "a number in (0, 1]"
                                                        : "a number > 0";
    throw ConfigError(where(origin, line, key) + " = " + printableText(value) + " is invalid: expected " + expected);
  }
  return result;
}

using FieldSetter = std::function<void(ChipSpec&, std::string_view value, std::string_view origin, int line)>;

template <typename T>
FieldSetter numberField(T ChipSpec::*field, std::string_view key, Range range = Range::kPositive) {
  return [field, key, range](ChipSpec& chip, std::string_view value, std::string_view origin, int line) {
    chip.*field = parseNumber<T>(value, origin, line, key, range);
  };
}

// "<major>.<minor>", as torch.npu.get_device_capability() returns it.
FieldSetter capabilityField(std::string ChipSpec::*field, std::string_view key) {
  return [field, key](ChipSpec& chip, std::string_view value, std::string_view origin, int line) {
    const auto dot = value.find('.');
    const auto digits = [](std::string_view part) {
      return !part.empty() && part.size() <= 4 &&
             std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string_view::npos || !digits(value.substr(0, dot)) || !digits(value.substr(dot + 1))) {
      throw ConfigError(where(origin, line, key) + " = \"" + printableText(value) +
                        "\" is invalid: expected <major>.<minor>, such as 9.0");
    }
    chip.*field = std::string(value);
  };
}

FieldSetter textField(std::string ChipSpec::*field, std::string_view key) {
  return [field, key](ChipSpec& chip, std::string_view value, std::string_view origin, int line) {
    const bool printable = std::all_of(value.begin(), value.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
    if (value.empty() || !printable) {
      throw ConfigError(where(origin, line, key) + " = \"" + printableText(value) +
                        "\" is invalid: expected printable ASCII text");
    }
    chip.*field = std::string(value);
  };
}

const std::map<std::string_view, FieldSetter>& fieldSetters() {
  static const std::map<std::string_view, FieldSetter> setters = {
      {"soc_name", textField(&ChipSpec::socName, "soc_name")},
      {"npu_smi_name", textField(&ChipSpec::npuSmiName, "npu_smi_name")},
      {"soc_version_id", numberField(&ChipSpec::socVersionId, "soc_version_id", Range::kNonNegative)},
      {"chip_family", textField(&ChipSpec::chipFamily, "chip_family")},
      {"cube_cores", numberField(&ChipSpec::cubeCores, "cube_cores")},
      {"vector_cores", numberField(&ChipSpec::vectorCores, "vector_cores")},
      {"ai_cpu_cores", numberField(&ChipSpec::aiCpuCores, "ai_cpu_cores", Range::kNonNegative)},
      {"cube_frequency_mhz", numberField(&ChipSpec::cubeFrequencyMhz, "cube_frequency_mhz")},
      {"cube_fp16_macs_per_cycle", numberField(&ChipSpec::cubeFp16MacsPerCycle, "cube_fp16_macs_per_cycle")},
      {"cube_int8_macs_per_cycle", numberField(&ChipSpec::cubeInt8MacsPerCycle, "cube_int8_macs_per_cycle")},
      {"cube_fp32_rate", numberField(&ChipSpec::cubeFp32Rate, "cube_fp32_rate", Range::kFraction)},
      {"vector_bytes_per_cycle", numberField(&ChipSpec::vectorBytesPerCycle, "vector_bytes_per_cycle")},
      {"hbm_bytes", numberField(&ChipSpec::hbmBytes, "hbm_bytes")},
      {"total_memory_bytes", numberField(&ChipSpec::totalMemoryBytes, "total_memory_bytes")},
      {"hbm_bandwidth_gbps", numberField(&ChipSpec::hbmBandwidthGbps, "hbm_bandwidth_gbps")},
      {"hbm_bandwidth_efficiency", numberField(&ChipSpec::hbmBandwidthEfficiency, "hbm_bandwidth_efficiency", Range::kFraction)},
      {"l2_cache_bytes", numberField(&ChipSpec::l2CacheBytes, "l2_cache_bytes", Range::kNonNegative)},
      {"pcie_bandwidth_gbps", numberField(&ChipSpec::pcieBandwidthGbps, "pcie_bandwidth_gbps")},
      {"hccs_link_bandwidth_gbps", numberField(&ChipSpec::hccsLinkBandwidthGbps, "hccs_link_bandwidth_gbps")},
      {"intra_node_peers", numberField(&ChipSpec::intraNodePeers, "intra_node_peers", Range::kNonNegative)},
      {"roce_bandwidth_gbps", numberField(&ChipSpec::roceBandwidthGbps, "roce_bandwidth_gbps", Range::kNonNegative)},
      {"device_capability", capabilityField(&ChipSpec::deviceCapability, "device_capability")},
  };
  return setters;
}

std::vector<ChipSpec> loadChips() {
  std::vector<ChipSpec> chips;
  auto addOrReplace = [&chips](ChipSpec chip) {
    auto same = std::find_if(chips.begin(), chips.end(),
                             [&](const ChipSpec& c) { return c.socName == chip.socName; });
    if (same != chips.end()) {
      *same = std::move(chip);
    } else {
      chips.push_back(std::move(chip));
    }
  };
  for (const auto& file : embeddedChipFiles()) {
    addOrReplace(parseChipSpec(file.text, file.fileName));
  }
  if (auto dir = environmentValue("NPUSIM_CHIP_DIR"); dir && !dir->empty()) {
    DIR* handle = opendir(dir->c_str());
    if (handle == nullptr) {
      throw ConfigError("NPUSIM_CHIP_DIR=" + printableText(*dir, 4096) + " is not a readable directory: " +
                        std::strerror(errno));
    }
    std::vector<std::string> names;
    while (dirent* entry = readdir(handle)) {
      std::string name = entry->d_name;
      if (name.size() > 4 && name.ends_with(".ini")) names.push_back(name);
    }
    closedir(handle);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string path = *dir + "/" + name;
      addOrReplace(parseChipSpec(readConfigFile(path, "chip file"), path));
    }
  }
  return chips;
}

}  // namespace

ChipSpec parseChipSpec(std::string_view text, std::string_view origin) {
  ChipSpec chip;
  std::map<std::string_view, bool> seen;
  int lineNumber = 0;
  size_t position = 0;
  while (position <= text.size()) {
    const size_t end = std::min(text.find('\n', position), text.size());
    std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++lineNumber;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto equals = line.find('=');
    if (equals == std::string_view::npos) {
      throw ConfigError("chip file " + printableText(origin, 4096) + " line " + std::to_string(lineNumber) +
                        ": expected \"key = value\", got \"" + printableText(line) + "\"");
    }
    const std::string_view key = trim(line.substr(0, equals));
    const std::string_view value = trim(line.substr(equals + 1));
    const auto setter = fieldSetters().find(key);
    if (setter == fieldSetters().end()) {
      throw ConfigError("chip file " + printableText(origin, 4096) + " line " + std::to_string(lineNumber) +
                        ": unknown key \"" + printableText(key) + "\"");
    }
    setter->second(chip, value, origin, lineNumber);
    seen[setter->first] = true;
  }
  for (const auto& [key, setter] : fieldSetters()) {
    if (!seen.count(key)) {
      throw ConfigError("chip file " + printableText(origin, 4096) + ": missing key \"" + std::string(key) + "\"");
    }
  }
  if (chip.cubeCores <= 0 || chip.vectorCores <= 0 || chip.cubeFrequencyMhz <= 0 || chip.hbmBytes == 0 ||
      chip.totalMemoryBytes == 0 || chip.totalMemoryBytes > chip.hbmBytes) {
    throw ConfigError("chip file " + printableText(origin, 4096) +
                      ": core counts, clock and memory sizes must be positive and total_memory_bytes <= hbm_bytes");
  }
  return chip;
}

const std::vector<ChipSpec>& knownChips() {
  // Loaded once; NPUSIM_CHIP_DIR is read at first use like the other variables.
  static const std::vector<ChipSpec> chips = loadChips();
  return chips;
}

const ChipSpec& findChip(std::string_view name) {
  for (const auto& chip : knownChips()) {
    if (chip.socName == name || chip.npuSmiName == name) return chip;
  }
  std::string known;
  for (const auto& chip : knownChips()) {
    known += (known.empty() ? "" : ", ") + chip.socName;
  }
  throw ConfigError("NPUSIM_SOC=" + std::string(name) + " is not a known chip; known chips: " + known);
}

const ChipSpec& chipFromEnvironment() {
  const auto name = environmentValue("NPUSIM_SOC");
  return findChip(name && !name->empty() ? *name : "Ascend910B2");
}

}  // namespace npusim::runtime

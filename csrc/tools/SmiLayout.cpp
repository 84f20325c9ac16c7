#include "tools/SmiLayout.h"

#include <cstdio>

namespace npusim::tools {

namespace {

constexpr int kNpuWidth = 27, kHealthWidth = 15, kStatsWidth = 52;
constexpr int kInnerWidth = kNpuWidth + 1 + kHealthWidth + 1 + kStatsWidth;  // 96
constexpr int kKeyWidth = 31;

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string rule(char fill) {
  return "+" + std::string(kNpuWidth, fill) + "+" + std::string(kHealthWidth, fill) + "+" + std::string(kStatsWidth, fill) + "+\n";
}

std::string fullRow(const std::string& text) { return "|" + pad(text, kInnerWidth) + "|\n"; }

std::string row(const std::string& npu, const std::string& health, const std::string& stats) {
  return "|" + pad(npu, kNpuWidth) + "|" + pad(health, kHealthWidth) + "|" + pad(stats, kStatsWidth) + "|\n";
}

std::string formatPower(double watts) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", watts);
  return text;
}

std::string keyValue(const std::string& key, const std::string& value) {
  return "\t" + pad(key, kKeyWidth) + ": " + value + "\n";
}

std::string keyValue(const std::string& key, uint64_t value) { return keyValue(key, std::to_string(value)); }

int hbmRate(const SmiDevice& device) {
  return device.hbmTotalMiB ? static_cast<int>(device.hbmUsedMiB * 100 / device.hbmTotalMiB) : 0;
}

}  // namespace

std::string usagePair(uint64_t used, uint64_t total) { return pad(std::to_string(used), 5) + "/ " + std::to_string(total); }

std::string formatInfoTable(const SmiSnapshot& snapshot) {
  std::string out = "+" + std::string(kInnerWidth, '-') + "+\n";
  out += fullRow(" npu-smi " + pad(snapshot.driverVersion, 25) + "Version: " + snapshot.driverVersion);
  out += rule('-');
  out += row(" " + pad("NPU", 6) + "Name", " Health", " " + pad("Power(W)", 12) + pad("Temp(C)", 18) + "Hugepages-Usage(page)");
  out += row(" Chip", " Bus-Id", " " + pad("AICore(%)", 12) + pad("Memory-Usage(MB)", 18) + "HBM-Usage(MB)");
  out += rule('=');
  for (const auto& device : snapshot.devices) {
    out += row(" " + pad(std::to_string(device.npuId), 6) + device.name, " " + device.health,
               " " + pad(formatPower(device.powerW), 12) + pad(std::to_string(device.temperatureC), 18) +
                   usagePair(device.hugepagesUsed, device.hugepagesTotal));
    out += row(" " + std::to_string(device.chipId), " " + device.busId,
               " " + pad(std::to_string(device.aicorePercent), 12) + pad(usagePair(device.ddrUsedMiB, device.ddrTotalMiB), 18) +
                   usagePair(device.hbmUsedMiB, device.hbmTotalMiB));
    out += rule('=');
  }
  out += rule('-');
  out += row(" " + pad("NPU", 8) + "Chip", " Process id", " " + pad("Process name", 25) + "| Process memory(MB)");
  out += rule('=');
  for (const auto& device : snapshot.devices) {
    if (device.processes.empty()) {
      out += fullRow(" No running processes found in NPU " + std::to_string(device.npuId));
    }
    for (const auto& process : device.processes) {
      // Names longer than the column are cut, so that the columns stay where parsers expect them.
      const std::string name = process.name.substr(0, 24);
      out += row(" " + pad(std::to_string(device.npuId), 8) + std::to_string(device.chipId), " " + std::to_string(process.pid),
                 " " + pad(name, 25) + "| " + std::to_string(process.memoryMiB));
    }
    out += rule('=');
  }
  return out;
}

std::string formatCardList(const SmiSnapshot& snapshot) {
  std::string out = keyValue("Total Count", snapshot.devices.size()) + "\n";
  for (const auto& device : snapshot.devices) {
    out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
    out += keyValue("Chip Count", 1) + "\n";
  }
  return out;
}

std::string formatChipMap(const SmiSnapshot& snapshot) {
  const auto line = [](const std::string& a, const std::string& b, const std::string& c, const std::string& d) {
    return "\t" + pad(a, kKeyWidth) + pad(b, kKeyWidth) + pad(c, kKeyWidth) + pad(d, kKeyWidth - 1) + "\n";
  };
  std::string out = line("NPU ID", "Chip ID", "Chip Logic ID", "Chip Name");
  for (const auto& device : snapshot.devices) {
    // The A2 board's second "chip" is its management MCU, without a logic id.
    const std::string chipName = "Ascend " + device.name;
    out += line(std::to_string(device.npuId), std::to_string(device.chipId), std::to_string(device.logicId), chipName);
    out += line(std::to_string(device.npuId), "1", "-", "Mcu");
  }
  return out;
}

std::string formatUsages(const SmiDevice& device, int chip) {
  std::string out;
  if (chip < 0) out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId)) + keyValue("Chip Count", 1) + "\n";
  out += keyValue("DDR Capacity(MB)", device.ddrTotalMiB);
  out += keyValue("DDR Usage Rate(%)", 0);
  out += keyValue("DDR Hugepages Total(page)", device.hugepagesTotal);
  out += keyValue("DDR Hugepages Usage Rate(%)", 0);
  out += keyValue("HBM Capacity(MB)", device.hbmTotalMiB);
  out += keyValue("HBM Usage Rate(%)", static_cast<uint64_t>(hbmRate(device)));
  out += keyValue("Aicore Usage Rate(%)", static_cast<uint64_t>(device.aicorePercent));
  out += keyValue("Aivector Usage Rate(%)", static_cast<uint64_t>(device.aivectorPercent));
  out += keyValue("Aicpu Usage Rate(%)", static_cast<uint64_t>(device.aicpuPercent));
  out += keyValue("Ctrlcpu Usage Rate(%)", static_cast<uint64_t>(device.ctrlcpuPercent));
  out += keyValue("DDR Bandwidth Usage Rate(%)", 0);
  out += keyValue("HBM Bandwidth Usage Rate(%)", static_cast<uint64_t>(device.hbmBandwidthPercent));
  out += keyValue("Chip ID", static_cast<uint64_t>(device.chipId));
  return out;
}

std::string formatBoard(const SmiSnapshot& snapshot, const SmiDevice& device, int chip) {
  std::string out;
  char serial[32];
  std::snprintf(serial, sizeof serial, "NPUSIM%010d", device.npuId);
  if (chip < 0) {
    out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
    out += keyValue("Product Name", "npusim simulated " + device.name);
    out += keyValue("Model", "NA");
    out += keyValue("Manufacturer", "npusim (simulated)");
    out += keyValue("Serial Number", serial);
    out += keyValue("Software Version", snapshot.driverVersion);
    out += keyValue("Firmware Version", snapshot.driverVersion);
    out += keyValue("Compatibility", "OK");
    out += keyValue("Board ID", "0x64");
    out += keyValue("PCB ID", "A");
    out += keyValue("BOM ID", "1");
    out += keyValue("PCIe Bus Info", device.busId);
    out += keyValue("Slot ID", static_cast<uint64_t>(device.npuId));
    out += keyValue("Class ID", "NA");
    out += keyValue("PCI Vendor ID", "0x19E5");
    out += keyValue("PCI Device ID", device.socName.rfind("Ascend910B", 0) == 0 ? "0xD802" : "0xD801");
    out += keyValue("Subsystem Vendor ID", "0x0200");
    out += keyValue("Subsystem Device ID", "0x0100");
    out += keyValue("Chip Count", 1);
  } else {
    out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
    out += keyValue("Chip ID", static_cast<uint64_t>(device.chipId));
    out += keyValue("Chip Type", "Ascend");
    out += keyValue("Chip Name", device.name);
    out += keyValue("Chip Version", "V1");
    out += keyValue("Board ID", "0x64");
    out += keyValue("PCIe Bus Info", device.busId);
  }
  return out;
}

std::string formatCommon(const SmiDevice& device, int chip) {
  std::string out;
  out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
  out += keyValue("Chip ID", static_cast<uint64_t>(chip < 0 ? device.chipId : chip));
  out += keyValue("Memory Usage Rate(%)", 0);
  out += keyValue("HBM Usage Rate(%)", static_cast<uint64_t>(hbmRate(device)));
  out += keyValue("Aicore Usage Rate(%)", static_cast<uint64_t>(device.aicorePercent));
  out += keyValue("Temperature(C)", static_cast<uint64_t>(device.temperatureC));
  out += keyValue("NPU Real-time Power(W)", formatPower(device.powerW));
  return out;
}

std::string formatMemory(const SmiDevice& device, int chip) {
  std::string out;
  out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
  out += keyValue("Chip ID", static_cast<uint64_t>(chip < 0 ? device.chipId : chip));
  out += keyValue("DDR Capacity(MB)", device.ddrTotalMiB);
  out += keyValue("DDR Usage Rate(%)", 0);
  out += keyValue("HBM Capacity(MB)", device.hbmTotalMiB);
  out += keyValue("HBM Usage Rate(%)", static_cast<uint64_t>(hbmRate(device)));
  out += keyValue("HBM Temperature(C)", static_cast<uint64_t>(device.temperatureC));
  return out;
}

std::string formatProcessMemory(const SmiDevice& device, int chip) {
  std::string out;
  out += keyValue("NPU ID", static_cast<uint64_t>(device.npuId));
  out += keyValue("Chip ID", static_cast<uint64_t>(chip < 0 ? device.chipId : chip));
  if (device.processes.empty()) return out + "\tNo process in device.\n";
  for (const auto& process : device.processes) {
    out += "\tProcess id:" + std::to_string(process.pid) + "\tProcess name:" + process.name +
           "\tProcess memory(MB):" + std::to_string(process.memoryMiB) + "\n";
  }
  return out;
}

std::string formatTopology(const SmiSnapshot& snapshot, unsigned hostCpus) {
  const size_t count = snapshot.devices.size();
  std::string out = pad("", 11);
  for (size_t j = 0; j < count; ++j) out += pad("NPU" + std::to_string(j), 11);
  out += "CPU Affinity\n";
  // Half the NPUs hang off each of two sockets on an 8-NPU server; split the host's CPUs likewise.
  const unsigned cpus = hostCpus == 0 ? 1 : hostCpus;
  const unsigned halfCpus = cpus >= 2 ? cpus / 2 : cpus;
  for (size_t i = 0; i < count; ++i) {
    std::string line = pad("NPU" + std::to_string(i), 11);
    for (size_t j = 0; j < count; ++j) line += pad(i == j ? "X" : "HCCS", 11);
    const bool secondHalf = cpus >= 2 && i >= (count + 1) / 2;
    const unsigned first = secondHalf ? halfCpus : 0;
    const unsigned last = secondHalf ? cpus - 1 : halfCpus - 1;
    line += std::to_string(first) + "-" + std::to_string(last);
    out += line + "\n";
  }
  out += "\nLegend:\n\n";
  out += "  X    = Self\n";
  out += "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.\n";
  out += "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.\n";
  out += "  PIX  = Path traversing a single PCIe switch\n";
  out += "  PXB  = Path traversing multiple PCIe switches\n";
  out += "  HCCS = Connection traversing HCCS.\n";
  out += "  NA   = Unknown relationship.\n";
  return out;
}

std::string formatWatchHeader() {
  return pad("NPU", 8) + pad("Chip", 8) + pad("Pwr(W)", 12) + pad("Temp(C)", 12) + pad("AI Core(%)", 12) +
         pad("AI Cpu(%)", 12) + pad("Ctrl Cpu(%)", 12) + pad("Memory(%)", 12) + "Memory BW(%)\n";
}

std::string formatWatchRows(const SmiSnapshot& snapshot, int onlyDevice, int onlyChip) {
  std::string out;
  for (const auto& device : snapshot.devices) {
    if (onlyDevice >= 0 && device.npuId != onlyDevice) continue;
    if (onlyChip >= 0 && device.chipId != onlyChip) continue;
    out += pad(std::to_string(device.npuId), 8) + pad(std::to_string(device.chipId), 8) + pad(formatPower(device.powerW), 12) +
           pad(std::to_string(device.temperatureC), 12) + pad(std::to_string(device.aicorePercent), 12) +
           pad(std::to_string(device.aicpuPercent), 12) + pad(std::to_string(device.ctrlcpuPercent), 12) +
           pad(std::to_string(hbmRate(device)), 12) + std::to_string(device.hbmBandwidthPercent) + "\n";
  }
  return out;
}

}  // namespace npusim::tools

#include "tools/SmiSnapshot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "runtime/DeviceRegistry.h"

#ifndef NPUSIM_SIMULATED_DRIVER_VERSION
#error "NPUSIM_SIMULATED_DRIVER_VERSION is set by csrc/tools/CMakeLists.txt from simulated_stack.ini"
#endif

namespace npusim::tools {

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

uint64_t ceilMiB(uint64_t bytes) { return (bytes + kMiB - 1) / kMiB; }

int percent(double fraction) { return static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 100.0)); }

}  // namespace

std::string simulatedDriverVersion() { return NPUSIM_SIMULATED_DRIVER_VERSION; }

PowerModel powerModelFor(const runtime::ChipSpec& chip) {
  // Board power of the Atlas 800T A2 (910B) and Atlas 800 (910A) NPU modules [U];
  // idle from the §18.1 sample (about 95 W on an idle 910B1).
  if (chip.chipFamily == "A1") return {70.0, 310.0};
  return {90.0, 400.0};
}

namespace detail {

void fillDevices(SmiSnapshot& snapshot, const runtime::ChipSpec& chip, const std::vector<runtime::ProcessStatus>& before,
                 const std::vector<runtime::ProcessStatus>& after) {
  const PowerModel power = powerModelFor(chip);
  // HBM the firmware keeps for itself: shown as used on an idle device (§18.1: ~3.3 GB).
  const uint64_t reservedBySystemMiB = chip.hbmBytes > chip.totalMemoryBytes ? (chip.hbmBytes - chip.totalMemoryBytes) / kMiB : 0;
  std::map<int, const runtime::ProcessStatus*> previous;
  for (const auto& status : before) previous[status.pid] = &status;
  std::vector<double> busyFraction(snapshot.devices.size(), 0.0);
  std::vector<uint64_t> reservedBytes(snapshot.devices.size(), 0);

  for (const auto& status : after) {
    const runtime::ProcessStatus* old = previous.count(status.pid) ? previous[status.pid] : nullptr;
    if (!status.socName.empty() && status.socName != chip.socName) {
      snapshot.notes.push_back("process " + std::to_string(status.pid) + " simulates " + status.socName +
                               ", this npu-smi shows " + chip.socName + " (NPUSIM_SOC differs)");
    }
    for (const auto& usage : status.devices) {
      if (usage.physicalDevice < 0 || usage.physicalDevice >= static_cast<int>(snapshot.devices.size())) {
        snapshot.notes.push_back("process " + std::to_string(status.pid) + " uses NPU " +
                                 std::to_string(usage.physicalDevice) + ", which this configuration (NPUSIM_DEVICE_COUNT=" +
                                 std::to_string(snapshot.devices.size()) + ") does not have");
        continue;
      }
      SmiDevice& device = snapshot.devices[static_cast<size_t>(usage.physicalDevice)];
      device.processes.push_back({status.pid, status.processName, ceilMiB(usage.reservedBytes)});
      reservedBytes[static_cast<size_t>(usage.physicalDevice)] += usage.reservedBytes;
      if (old == nullptr || status.updatedUnixMs <= old->updatedUnixMs) continue;
      for (const auto& oldUsage : old->devices) {
        if (oldUsage.physicalDevice != usage.physicalDevice || usage.busyNs < oldUsage.busyNs) continue;
        // Prefer the simulated clock: the load the real chip would show. Without it (an
        // older writer), the wall clock: the load at this host's pace.
        const bool simulated = usage.simulatedNs > oldUsage.simulatedNs && oldUsage.simulatedNs > 0;
        const double windowNs = simulated ? double(usage.simulatedNs - oldUsage.simulatedNs)
                                          : double(status.updatedUnixMs - old->updatedUnixMs) * 1e6;
        busyFraction[static_cast<size_t>(usage.physicalDevice)] += double(usage.busyNs - oldUsage.busyNs) / windowNs;
      }
    }
  }

  for (size_t i = 0; i < snapshot.devices.size(); ++i) {
    SmiDevice& device = snapshot.devices[i];
    device.hbmTotalMiB = chip.hbmBytes / kMiB;
    device.hbmUsedMiB = std::min(device.hbmTotalMiB, reservedBySystemMiB + ceilMiB(reservedBytes[i]));
    const double load = std::clamp(busyFraction[i], 0.0, 1.0);
    const double memoryShare = device.hbmTotalMiB ? double(device.hbmUsedMiB) / double(device.hbmTotalMiB) : 0.0;
    device.aicorePercent = percent(load);
    device.aivectorPercent = percent(load * 0.5);  // vector units run the elementwise share of the work [I]
    device.hbmBandwidthPercent = percent(load * 0.6);
    device.ctrlcpuPercent = device.processes.empty() ? 0 : 1;
    // Idle power differs a little from board to board, as on a real server (94.6 W / 97.8 W in §18.1).
    const double idle = power.idleW + double((device.npuId * 37) % 80) / 10.0;
    const double watts = idle + (power.boardW - idle) * (0.85 * load + 0.05 * memoryShare);
    device.powerW = std::round(watts * 10.0) / 10.0;
    device.temperatureC = static_cast<int>(std::lround(36.0 + (watts - power.idleW) * 0.09 + double(device.npuId % 3)));
  }
}

}  // namespace detail

SmiSnapshot takeSnapshot(int sampleMs) {
  const runtime::DeviceRegistry registry = runtime::DeviceRegistry::fromEnvironment();
  const std::string directory = runtime::statusDirectory();
  std::vector<runtime::ProcessStatus> before = runtime::readLiveStatuses(directory);
  std::vector<runtime::ProcessStatus> after;
  if (!before.empty() && sampleMs > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sampleMs));
    after = runtime::readLiveStatuses(directory);
  } else {
    after = before;
  }
  return buildSnapshot(registry.chip(), registry.physicalDeviceCount(), simulatedDriverVersion(), before, after,
                       [&registry](int id) { return registry.busId(id); });
}

}  // namespace npusim::tools

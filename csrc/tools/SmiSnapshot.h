// What `npu-smi` shows about the simulated server: one entry per physical
// device of NPUSIM_DEVICE_COUNT (ASCEND_RT_VISIBLE_DEVICES does not hide
// devices from npu-smi, as on a real server), with its memory and processes
// from the live status registry (csrc/runtime/StatusRegistry.h) and power,
// temperature and AI Core load derived from the processes' activity.
//
// Activity: a status file carries busy_ns, the simulated device time a
// process has kept a device busy, and simulated_ns, the process's simulated
// time on that device. Two samples of the registry give
// AI Core % = growth of busy_ns / growth of simulated_ns: how busy the real
// chip would be running this program (the simulator itself runs kernels on
// the CPU, far slower than the chip, so wall-clock time would say little).
// Files of older writers without simulated_ns fall back to wall-clock time.
//
// Power and temperature are a model, not a measurement [I]: idle power plus
// a share of the headroom to the chip's board power proportional to the AI
// Core load and HBM occupancy; temperature rises linearly with power.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ChipSpec.h"
#include "runtime/StatusRegistry.h"

namespace npusim::tools {

struct SmiProcess {
  int pid = 0;
  std::string name;
  uint64_t memoryMiB = 0;  // reserved by the process's caching allocator
};

struct SmiDevice {
  int npuId = 0;
  int chipId = 0;
  int logicId = 0;
  std::string name;        // "910B2"
  std::string socName;     // "Ascend910B2"
  std::string health = "OK";
  std::string busId;
  double powerW = 0;
  int temperatureC = 0;
  int aicorePercent = 0;
  int aivectorPercent = 0;
  int aicpuPercent = 0;
  int ctrlcpuPercent = 0;
  int hbmBandwidthPercent = 0;
  uint64_t hbmUsedMiB = 0;
  uint64_t hbmTotalMiB = 0;
  uint64_t hugepagesUsed = 0, hugepagesTotal = 0;
  uint64_t ddrUsedMiB = 0, ddrTotalMiB = 0;  // card DDR: 0 / 0 on A2
  std::vector<SmiProcess> processes;
};

struct SmiSnapshot {
  std::string driverVersion;
  std::vector<SmiDevice> devices;
  std::vector<std::string> notes;  // processes on devices this configuration lacks, ...
};

struct PowerModel {
  double idleW;
  double boardW;
};

PowerModel powerModelFor(const runtime::ChipSpec& chip);

// Builds the snapshot. `before` may be empty (no load is then inferred);
// `after` gives memory and the process table. `busIdOf` maps a physical id
// to its PCI bus id.
template <typename BusId>
SmiSnapshot buildSnapshot(const runtime::ChipSpec& chip, int physicalCount, const std::string& driverVersion,
                          const std::vector<runtime::ProcessStatus>& before,
                          const std::vector<runtime::ProcessStatus>& after, BusId busIdOf);

// The snapshot of the environment's simulated server: NPUSIM_SOC,
// NPUSIM_DEVICE_COUNT, the registry in statusDirectory(). Samples the
// registry twice `sampleMs` apart when some process is live.
SmiSnapshot takeSnapshot(int sampleMs);

// The driver version npu-smi reports (python/npusim/data/simulated_stack.ini).
std::string simulatedDriverVersion();

namespace detail {
void fillDevices(SmiSnapshot& snapshot, const runtime::ChipSpec& chip, const std::vector<runtime::ProcessStatus>& before,
                 const std::vector<runtime::ProcessStatus>& after);
}

template <typename BusId>
SmiSnapshot buildSnapshot(const runtime::ChipSpec& chip, int physicalCount, const std::string& driverVersion,
                          const std::vector<runtime::ProcessStatus>& before,
                          const std::vector<runtime::ProcessStatus>& after, BusId busIdOf) {
  SmiSnapshot snapshot;
  snapshot.driverVersion = driverVersion;
  for (int id = 0; id < physicalCount; ++id) {
    SmiDevice device;
    device.npuId = id;
    device.logicId = id;
    device.name = chip.npuSmiName;
    device.socName = chip.socName;
    device.busId = busIdOf(id);
    snapshot.devices.push_back(std::move(device));
  }
  detail::fillDevices(snapshot, chip, before, after);
  return snapshot;
}

}  // namespace npusim::tools

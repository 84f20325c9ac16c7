#include "runtime/DeviceRecovery.h"

#include <string>

#include "runtime/Plog.h"

namespace npusim::runtime {

std::atomic<uint64_t> DeviceRecovery::state_{0};

void DeviceRecovery::setUnsafeDataCheck(bool enabled) noexcept {
  if (enabled) {
    state_.fetch_or(kUnsafeCheckBit, std::memory_order_acq_rel);
  } else {
    state_.fetch_and(~kUnsafeCheckBit, std::memory_order_acq_rel);
  }
  NPUSIM_PLOG(LogLevel::kInfo, "APP", std::string("Set npu data unsafe flag to ") + (enabled ? "1" : "0"));
}

bool DeviceRecovery::stopped(int device) noexcept {
  const uint64_t bit = deviceBit(device);
  return bit != 0 && (state_.load(std::memory_order_acquire) & bit) != 0;
}

void DeviceRecovery::stop(int device) noexcept {
  state_.fetch_or(deviceBit(device), std::memory_order_acq_rel);
  NPUSIM_PLOG(LogLevel::kInfo, "APP", "NPU stop device, device is " + std::to_string(device) + ".");
}

void DeviceRecovery::restart(int device) noexcept {
  state_.fetch_and(~deviceBit(device), std::memory_order_acq_rel);
  NPUSIM_PLOG(LogLevel::kInfo, "APP", "NPU restart device, device is " + std::to_string(device) + ".");
}

}  // namespace npusim::runtime

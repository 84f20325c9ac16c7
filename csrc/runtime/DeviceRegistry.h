// Which simulated devices a process sees, and what each one is.
//
// A process sees the physical devices of one server (NPUSIM_DEVICE_COUNT of
// the chip chosen by NPUSIM_SOC), filtered by ASCEND_RT_VISIBLE_DEVICES with
// torch_npu's rules. Device ids in every other API are logical (visible) ids.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/ChipSpec.h"

namespace npusim::runtime {

// torch_npu's parse of ASCEND_RT_VISIBLE_DEVICES: comma-separated integers,
// parsing stops at the first element that does not start with a digit, a list
// that is not strictly ascending gives no device, and the first entry at or
// above `physicalCount` ends the list. Unset (nullopt) means all devices.
std::vector<int> parseVisibleDevices(const std::optional<std::string>& value, int physicalCount);

class DeviceRegistry {
 public:
  static constexpr int kDefaultPhysicalCount = 8;  // one Atlas 800T A2 server
  static constexpr int kMaxPhysicalCount = 64;

  DeviceRegistry(const ChipSpec& chip, int physicalCount, const std::optional<std::string>& visibleDevices);

  // NPUSIM_SOC, NPUSIM_DEVICE_COUNT (1-64, default 8), ASCEND_RT_VISIBLE_DEVICES.
  static DeviceRegistry fromEnvironment();

  const ChipSpec& chip() const { return *chip_; }
  int deviceCount() const { return static_cast<int>(visible_.size()); }
  int physicalDeviceCount() const { return physicalCount_; }

  // Throws RuntimeError(107001) with the CANN detail when `device` is not a
  // visible device; `call` is the API name shown in the message.
  void checkDevice(int device, std::string_view call) const;
  int physicalId(int device) const;

  // Stable per physical device, like the uuid field of the real properties.
  std::string uuid(int device) const;
  // PCI bus id shown by npu-smi, e.g. "0000:C1:00.0".
  std::string busId(int physicalDevice) const;

 private:
  const ChipSpec* chip_;
  int physicalCount_;
  std::vector<int> visible_;
};

}  // namespace npusim::runtime

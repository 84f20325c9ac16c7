#include "runtime/DeviceRegistry.h"

#include <cctype>
#include <cstdio>
#include <unistd.h>

#include "runtime/EnvironmentVariables.h"
#include "runtime/Error.h"

namespace npusim::runtime {

std::vector<int> parseVisibleDevices(const std::optional<std::string>& value, int physicalCount) {
  std::vector<int> devices;
  if (!value) {
    for (int i = 0; i < physicalCount; ++i) devices.push_back(i);
    return devices;
  }
  size_t position = 0;
  const std::string& text = *value;
  while (position <= text.size()) {
    size_t end = text.find(',', position);
    if (end == std::string::npos) end = text.size();
    std::string_view element(text.data() + position, end - position);
    position = end + 1;
    while (!element.empty() && std::isspace(static_cast<unsigned char>(element.front()))) element.remove_prefix(1);
    size_t digits = 0;
    while (digits < element.size() && std::isdigit(static_cast<unsigned char>(element[digits]))) ++digits;
    if (digits == 0 || digits > 9) break;
    const int id = std::stoi(std::string(element.substr(0, digits)));
    if (!devices.empty() && id <= devices.back()) return {};
    if (id >= physicalCount) break;
    devices.push_back(id);
    // A trailing non-digit ends the list after this element, as strtoul would.
    if (digits != element.size()) break;
  }
  return devices;
}

DeviceRegistry::DeviceRegistry(const ChipSpec& chip, int physicalCount, const std::optional<std::string>& visibleDevices)
    : chip_(&chip), physicalCount_(physicalCount), visible_(parseVisibleDevices(visibleDevices, physicalCount)) {}

DeviceRegistry DeviceRegistry::fromEnvironment() {
  const ChipSpec& chip = chipFromEnvironment();
  const int count = static_cast<int>(
      integerEnvironmentValue("NPUSIM_DEVICE_COUNT", kDefaultPhysicalCount, 1, kMaxPhysicalCount));
  return DeviceRegistry(chip, count, environmentValue("ASCEND_RT_VISIBLE_DEVICES"));
}

void DeviceRegistry::checkDevice(int device, std::string_view call) const {
  if (device >= 0 && device < deviceCount()) return;
  // The CANN detail that follows the ACL text on the real stack.
  const std::string detail = "EE1001: [PID: " + std::to_string(::getpid()) +
                             "] The argument is invalid.Reason: Set device failed, invalid device, set drv device=" +
                             std::to_string(device) + ", valid device range is [0, " + std::to_string(deviceCount()) +
                             ")";
  throw RuntimeError(ErrorCode::kRtInvalidDeviceId, std::string(call), detail);
}

int DeviceRegistry::physicalId(int device) const {
  checkDevice(device, "aclrtGetPhyDevIdByLogicDevId");
  return visible_[device];
}

std::string DeviceRegistry::uuid(int device) const {
  const int physical = physicalId(device);
  char text[64];
  std::snprintf(text, sizeof text, "%08x-0000-4000-8000-%012x", 0x910b0000u + static_cast<unsigned>(chip_->socVersionId),
                static_cast<unsigned>(physical));
  return text;
}

std::string DeviceRegistry::busId(int physicalDevice) const {
  // Atlas 800T A2 bus numbers as npu-smi shows them on a typical server.
  static constexpr unsigned kBuses[8] = {0xC1, 0x01, 0x41, 0x81, 0xC2, 0x02, 0x42, 0x82};
  const unsigned bus = physicalDevice < 8 ? kBuses[physicalDevice] : static_cast<unsigned>(0x10 + physicalDevice);
  char text[32];
  std::snprintf(text, sizeof text, "0000:%02X:00.0", bus & 0xFF);
  return text;
}

}  // namespace npusim::runtime

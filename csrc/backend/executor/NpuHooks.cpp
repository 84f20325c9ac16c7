// PrivateUse1 hooks: what ATen asks of the npu backend outside operators
// (availability, generators, pinned memory, device of a pointer).
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Storage.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuGenerator.h"
#include "backend/device/PinnedMemory.h"
#include "backend/layouts/StorageResize.h"
#include "backend/numerics/InfNanMode.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

using runtime::Runtime;

class NpuHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return deviceCount() > 0; }

  void init() const override {
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().setDevice(Runtime::instance().currentDevice()));
    // An unsupported INF_NAN_MODE_ENABLE fails at device init, as on torch_npu.
    floatOverflowMode();
  }

  bool hasPrimaryContext(c10::DeviceIndex device) const override {
    const Runtime* started = Runtime::existing();
    return started != nullptr && started->isDeviceInitialized(device);
  }

  c10::DeviceIndex deviceCount() const override {
    try {
      // Counting does not start the runtime: the environment may still change.
      return static_cast<c10::DeviceIndex>(Runtime::visibleDeviceCount());
    } catch (...) {
      return 0;
    }
  }

  void setCurrentDevice(c10::DeviceIndex device) const override {
    NPUSIM_TRANSLATE_ERRORS(Runtime::instance().setDevice(device));
  }

  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(Runtime::currentDevice());
  }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto previous = getCurrentDevice();
    if (device != previous) setCurrentDevice(device);
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return defaultNpuGenerator(device == -1 ? getCurrentDevice() : device);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return at::make_generator<NpuGenerator>(device == -1 ? getCurrentDevice() : device);
  }

  c10::Device getDeviceFromPtr(void* data) const override {
    auto& rt = Runtime::instance();
    for (int d = 0; d < rt.deviceCount(); ++d) {
      if (rt.isDeviceInitialized(d) && rt.memory(d).contains(data)) {
        return c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(d));
      }
    }
    TORCH_CHECK(false, "The pointer ", data, " is not device memory of any npu device");
  }

  bool isPinnedPtr(const void* data) const override { return isPinnedHostPointer(data); }

  at::Allocator* getPinnedMemoryAllocator() const override { return pinnedHostAllocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newSize) const override {
    resizeNpuStorage(storage, newSize);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new NpuHooks()); }
};
RegisterHooks registerHooks;

}  // namespace
}  // namespace npusim::backend

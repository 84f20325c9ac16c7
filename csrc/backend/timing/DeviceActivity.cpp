#include "backend/timing/DeviceActivity.h"

namespace npusim::backend {

namespace detail {
std::atomic<DeviceActivitySink> deviceActivitySink{nullptr};
}

void setDeviceActivitySink(DeviceActivitySink sink) noexcept {
  detail::deviceActivitySink.store(sink, std::memory_order_release);
}

}  // namespace npusim::backend

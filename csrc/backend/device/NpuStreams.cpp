#include "backend/device/NpuStreams.h"

#include <array>

namespace npusim::backend {
namespace {
thread_local std::array<runtime::StreamId, kMaxDevices> tlsCurrentStreams{};
}

runtime::StreamId currentStream(int device) noexcept {
  return device >= 0 && device < kMaxDevices ? tlsCurrentStreams[static_cast<size_t>(device)] : 0;
}

void setCurrentStream(int device, runtime::StreamId stream) noexcept {
  if (device >= 0 && device < kMaxDevices) tlsCurrentStreams[static_cast<size_t>(device)] = stream;
}

}  // namespace npusim::backend

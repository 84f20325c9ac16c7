// The current stream of each simulated device, per host thread (as with
// torch_npu's getCurrentNPUStream: a thread starts on the default stream).
#pragma once

#include <cstdint>

#include "runtime/Timeline.h"

namespace npusim::backend {

constexpr int kMaxDevices = 64;

runtime::StreamId currentStream(int device) noexcept;
void setCurrentStream(int device, runtime::StreamId stream) noexcept;

}  // namespace npusim::backend

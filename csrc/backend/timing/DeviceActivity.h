// What the simulated device did, one record per launch, copy or host
// synchronization, for a profiler that is listening (csrc/profiler). The
// backend only reports; with no listener a launch pays one relaxed load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace npusim::backend {

enum class DeviceActivityKind : uint8_t {
  kKernel,
  kCopyHostToDevice,
  kCopyDeviceToHost,
  kCopyDeviceToDevice,
  kSynchronize,  // the host waited for the device (what + source line)
  kCollective,   // an HCCL collective on its stream (what: its name)
};

struct DeviceActivity {
  DeviceActivityKind kind = DeviceActivityKind::kKernel;
  int device = 0;
  int64_t stream = 0;
  uint64_t hostNs = 0;       // simulated host clock after issuing it
  uint64_t startNs = 0;      // simulated start on the stream
  uint64_t durationNs = 0;   // modelled device time
  uint64_t dispatchNs = 0;   // modelled host launch cost
  uint8_t placement = 0;     // runtime::Placement
  uint8_t unit = 0;          // perf::Unit
  uint64_t bytes = 0;
  std::string what;          // kSynchronize: the cause; kKernel: the kernel's own name when it is not the operator's
  std::string source;        // the user's source line (syncs, AI CPU and fallback kernels)
};

using DeviceActivitySink = void (*)(const DeviceActivity&);

// Installs (or, with nullptr, removes) the one listener.
void setDeviceActivitySink(DeviceActivitySink sink) noexcept;

namespace detail {
extern std::atomic<DeviceActivitySink> deviceActivitySink;
}

inline DeviceActivitySink deviceActivitySink() noexcept {
  return detail::deviceActivitySink.load(std::memory_order_relaxed);
}

}  // namespace npusim::backend

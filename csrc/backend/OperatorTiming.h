// Charges the work of npu operators and copies to the simulated timeline.
//
// Until the performance model prices each operator (csrc/perf), every kernel
// costs the device-side launch floor and every launch costs the host its
// dispatch time; both are the working values of ascend-hardware.md §6.3.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/Timeline.h"

namespace npusim::backend {

constexpr runtime::SimTimeNs kHostDispatchNs = 15'000;  // eager dispatch with the task queue on
constexpr runtime::SimTimeNs kKernelFloorNs = 5'000;    // minimum device time of one kernel

// One kernel launched from the host on the current stream of `device`.
void chargeKernel(int device, runtime::SimTimeNs deviceDuration = kKernelFloorNs);

// The host blocks until the current stream of `device` has finished (a
// synchronization point such as .item() or a copy to the host).
void waitForCurrentStream(int device);

}  // namespace npusim::backend

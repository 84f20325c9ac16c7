// Prices AscendCL copies and memsets on the simulated timeline with the performance model
// (csrc/perf) that prices PyTorch's copies, so that the same copy costs the same from either
// face: PCIe rates for host<->device (pinned host memory is DMA'd directly, pageable memory is
// staged), a data-movement kernel for device<->device copies and memsets.
#pragma once

#include <cstdint>

#include "perf/CostModel.h"
#include "runtime/Timeline.h"

namespace npusim::acl {

using perf::Transfer;

// Charges one task of `bytes` on `stream` of `device` (the host pays the dispatch cost, unless
// the device launches the task from an executed model), then makes the host wait for the stream
// when `hostWaits` (a synchronous call, a copy from pageable memory) or ASCEND_LAUNCH_BLOCKING=1.
void chargeTransfer(int device, runtime::StreamId stream, uint64_t bytes, Transfer kind, bool pinnedHost,
                    bool hostWaits, bool launchedByDevice = false);

// One launch of a captured model (aclmdlRIExecuteAsync): the host's dispatch of a graph launch,
// as NPUGraph's replay is charged; its tasks follow without dispatch.
void chargeModelLaunch(int device, runtime::StreamId stream);

// A task that runs on the host (a host callback): dispatch cost only.
void chargeHostTask();

}  // namespace npusim::acl

#include "backend/OperatorTiming.h"

#include "backend/NpuStreams.h"
#include "runtime/Runtime.h"

namespace npusim::backend {

void chargeKernel(int device, runtime::SimTimeNs deviceDuration) {
  auto& rt = runtime::Runtime::instance();
  rt.hostClock().advance(kHostDispatchNs);
  rt.timeline(device).submit(currentStream(device), deviceDuration);
}

void waitForCurrentStream(int device) {
  runtime::Runtime::instance().timeline(device).synchronizeStream(currentStream(device));
}

}  // namespace npusim::backend

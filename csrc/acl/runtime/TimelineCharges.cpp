#include "acl/runtime/TimelineCharges.h"

#include "perf/CostModel.h"
#include "runtime/Runtime.h"

namespace npusim::acl {
namespace {

const perf::CostModel& costModel() {
  static const perf::CostModel model(runtime::Runtime::instance().chip());
  return model;
}

}  // namespace

void chargeTransfer(int device, runtime::StreamId stream, uint64_t bytes, Transfer kind, bool pinnedHost,
                    bool hostWaits, bool launchedByDevice) {
  runtime::Runtime& rt = runtime::Runtime::instance();
  const perf::CostModel& model = costModel();
  const runtime::SimTimeNs deviceNs = model.transfer(kind, bytes, pinnedHost).deviceNs;
  runtime::DeviceTimeline& timeline = rt.timeline(device);
  if (!launchedByDevice) {
    rt.hostClock().advance(model.hostDispatchNs(rt.taskQueueLevel(), perf::OperatorKind::kDataMovement));
  }
  timeline.submit(stream, deviceNs);
  if (hostWaits || rt.launchBlocking()) timeline.synchronizeStream(stream);
}

void chargeModelLaunch(int device, runtime::StreamId stream) {
  runtime::Runtime& rt = runtime::Runtime::instance();
  rt.hostClock().advance(costModel().hostDispatchNs(rt.taskQueueLevel(), perf::OperatorKind::kOther));
  rt.timeline(device).submit(stream, 0);
  if (rt.launchBlocking()) rt.timeline(device).synchronizeStream(stream);
}

void chargeHostTask() {
  runtime::Runtime& rt = runtime::Runtime::instance();
  rt.hostClock().advance(costModel().hostDispatchNs(rt.taskQueueLevel()));
}

}  // namespace npusim::acl

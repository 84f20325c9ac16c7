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
  runtime::SimTimeNs deviceNs = 0;
  switch (kind) {
    case Transfer::kHostToDevice: deviceNs = model.hostToDevice(bytes, pinnedHost); break;
    case Transfer::kDeviceToHost: deviceNs = model.deviceToHost(bytes, pinnedHost); break;
    case Transfer::kDeviceToDevice:
    case Transfer::kMemset: {
      // A data-movement kernel over `bytes` (a memset writes them, a copy reads and writes).
      const int64_t elements = static_cast<int64_t>(bytes);
      perf::TensorDesc desc;
      desc.sizes = &elements;
      desc.rank = 1;
      desc.dtype = perf::DType::kUInt8;
      deviceNs = kind == Transfer::kMemset
                     ? model.price(perf::OperatorKind::kDataMovement, nullptr, 0, &desc, 1, perf::Placement::kAiCore,
                                   perf::CostOptions{})
                           .deviceNs
                     : model.price(perf::OperatorKind::kDataMovement, &desc, 1, &desc, 1, perf::Placement::kAiCore,
                                   perf::CostOptions{})
                           .deviceNs;
      break;
    }
  }
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

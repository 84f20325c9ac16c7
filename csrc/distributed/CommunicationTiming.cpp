#include "distributed/CommunicationTiming.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "backend/device/NpuStreams.h"
#include "backend/timing/DeviceActivity.h"
#include "runtime/BusyIntervals.h"
#include "runtime/Runtime.h"

namespace npusim::distributed {
namespace {

// Host cost of enqueuing one HCCL task (as a kernel launch on the real stack).
constexpr runtime::SimTimeNs kLaunchNs = 10'000;

struct Totals {
  std::mutex mutex;
  uint64_t ns = 0;
  uint64_t exposedNs = 0;
  uint64_t calls = 0;
  std::map<std::string, OperationTotals> operations;
  std::set<std::pair<int, runtime::StreamId>> hcclStreams;
};

// Communication time during which another stream of the same device was busy.
uint64_t overlapOf(const std::set<std::pair<int, runtime::StreamId>>& hcclStreams) {
  uint64_t total = 0;
  std::set<int> devices;
  for (const auto& [device, stream] : hcclStreams) devices.insert(device);
  for (int device : devices) {
    std::vector<std::vector<runtime::BusyInterval>> communication, compute;
    for (runtime::StreamId stream : runtime::streamsWithIntervals(device)) {
      (hcclStreams.count({device, stream}) ? communication : compute).push_back(runtime::busyIntervals(device, stream));
    }
    total += runtime::overlapLength(runtime::unionOf(communication), runtime::unionOf(compute));
  }
  return total;
}

Totals& totals() {
  static Totals instance;
  return instance;
}

const perf::CollectiveModel& model() {
  static const perf::CollectiveModel instance;
  return instance;
}

}  // namespace

runtime::Event chargeCollective(const CommunicationPlacement& placement, perf::Collective op, uint64_t bytes,
                                bool peerSameServer) {
  auto& rt = runtime::Runtime::instance();
  auto& timeline = rt.timeline(placement.device);
  if (!runtime::busyIntervalsEnabled()) runtime::enableBusyIntervals(true);
  const runtime::StreamId current = backend::currentStream(placement.device);
  runtime::Event inputsReady;
  timeline.recordEvent(inputsReady, current, false);
  timeline.streamWaitEvent(placement.hcclStream, inputsReady);
  rt.hostClock().advance(kLaunchNs);
  const perf::CollectiveCost cost = model().price(op, bytes, placement.topology, peerSameServer);
  const runtime::SimTimeNs end = timeline.submit(placement.hcclStream, cost.ns);
  if (const backend::DeviceActivitySink sink = backend::deviceActivitySink()) {  // a profiler is recording
    backend::DeviceActivity activity;
    activity.kind = backend::DeviceActivityKind::kCollective;
    activity.device = placement.device;
    activity.stream = placement.hcclStream;
    activity.hostNs = rt.hostClock().now();
    activity.startNs = end - cost.ns;
    activity.durationNs = cost.ns;
    activity.dispatchNs = kLaunchNs;
    activity.bytes = bytes;
    activity.what = perf::collectiveName(op);
    sink(activity);
  }
  runtime::Event done;
  timeline.recordEvent(done, placement.hcclStream, true);

  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.ns += cost.ns;
  t.calls += 1;
  t.hcclStreams.insert({placement.device, placement.hcclStream});
  OperationTotals& entry = t.operations[perf::collectiveName(op)];
  entry.name = perf::collectiveName(op);
  entry.algorithm = cost.algorithm;
  entry.calls += 1;
  entry.bytes += bytes;
  entry.ns += cost.ns;
  if (bytes >= entry.largestBytes) {
    entry.largestBytes = bytes;
    entry.busBandwidthBytesPerS = cost.busBandwidth(bytes);
  }
  return done;
}

uint64_t waitOnCurrentStream(int device, const runtime::Event& done) {
  auto& rt = runtime::Runtime::instance();
  auto& timeline = rt.timeline(device);
  const runtime::StreamId current = backend::currentStream(device);
  const runtime::SimTimeNs ready = std::max(timeline.streamClock(current), rt.hostClock().now());
  const uint64_t stall = done.time > ready ? done.time - ready : 0;
  timeline.streamWaitEvent(current, done);
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.exposedNs += stall;
  return stall;
}

CommunicationTotals communicationTotals() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  CommunicationTotals out;
  out.ns = t.ns;
  out.exposedNs = t.exposedNs;
  out.calls = t.calls;
  out.overlapNs = overlapOf(t.hcclStreams);
  out.overlapTruncated = runtime::busyIntervalsTruncated();
  for (const auto& [name, entry] : t.operations) out.operations.push_back(entry);
  return out;
}

void resetCommunicationTotals() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.ns = 0;
  t.exposedNs = 0;
  t.calls = 0;
  t.operations.clear();
  runtime::clearBusyIntervals();
}

}  // namespace npusim::distributed

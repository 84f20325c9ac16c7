#include "runtime/Timeline.h"

#include <algorithm>
#include <limits>
#include <string>

#include "runtime/BusyIntervals.h"
#include "runtime/Error.h"

namespace npusim::runtime {

SimTimeNs HostClock::advance(SimTimeNs duration) noexcept {
  return now_.fetch_add(duration, std::memory_order_acq_rel) + duration;
}

void HostClock::waitUntil(SimTimeNs time) noexcept {
  SimTimeNs current = now_.load(std::memory_order_acquire);
  while (current < time && !now_.compare_exchange_weak(current, time, std::memory_order_acq_rel)) {
  }
}

DeviceTimeline::DeviceTimeline(int device, HostClock& host, int streamsPerPool)
    : device_(device), host_(host), streamsPerPool_(streamsPerPool), indexBits_(streamsPerPool <= 8 ? 3 : 5) {
  if (streamsPerPool <= 0 || streamsPerPool > 32) {
    throw RuntimeError(ErrorCode::kRtParamInvalid, "DeviceTimeline", "streams per pool must be in [1, 32]");
  }
  streams_.reserve(2 + 2 * static_cast<size_t>(streamsPerPool) + kSyncLaunchStreams);
  streams_.push_back(StreamState{kNormalPriority, 0, {}});
  for (int i = 0; i < streamsPerPool; ++i) streams_.push_back(StreamState{kNormalPriority, 0, {}});
  for (int i = 0; i < streamsPerPool; ++i) streams_.push_back(StreamState{kHighPriority, 0, {}});
  for (int i = 0; i < kSyncLaunchStreams; ++i) streams_.push_back(StreamState{kNormalPriority, 0, {}});
  streams_.push_back(StreamState{kNormalPriority, 0, {}});  // secondary
}

StreamId DeviceTimeline::makeStreamId(StreamType type, int index) const noexcept {
  return (static_cast<StreamId>(type) << indexBits_) | static_cast<StreamId>(index);
}

StreamId DeviceTimeline::streamFromPool(bool highPriority) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t index = (highPriority ? nextHigh_++ : nextNormal_++) % static_cast<uint32_t>(streamsPerPool_);
  return makeStreamId(highPriority ? StreamType::kHigh : StreamType::kNormal, static_cast<int>(index));
}

StreamId DeviceTimeline::syncLaunchStream() {
  std::lock_guard<std::mutex> lock(mutex_);
  return makeStreamId(StreamType::kSyncLaunch, static_cast<int>(nextSyncLaunch_++ % kSyncLaunchStreams));
}

int64_t DeviceTimeline::slot(StreamId stream) const noexcept {
  if (stream < 0 || stream > std::numeric_limits<uint32_t>::max()) return -1;
  const int64_t type = stream >> indexBits_;
  const int64_t index = stream & ((int64_t{1} << indexBits_) - 1);
  const int64_t pool = streamsPerPool_;
  switch (static_cast<StreamType>(type)) {
    case StreamType::kDefault: return index == 0 ? 0 : -1;
    case StreamType::kNormal: return index < pool ? 1 + index : -1;
    case StreamType::kHigh: return index < pool ? 1 + pool + index : -1;
    case StreamType::kSyncLaunch: return index < kSyncLaunchStreams ? 1 + 2 * pool + index : -1;
    case StreamType::kSecondary: return index == 0 ? 1 + 2 * pool + kSyncLaunchStreams : -1;
  }
  return -1;
}

bool DeviceTimeline::isValidStream(StreamId stream) const noexcept { return slot(stream) >= 0; }

bool DeviceTimeline::isSyncLaunch(StreamId stream) const noexcept {
  return isValidStream(stream) && (stream >> indexBits_) == static_cast<StreamId>(StreamType::kSyncLaunch);
}

DeviceTimeline::StreamState& DeviceTimeline::state(StreamId stream) {
  const int64_t position = slot(stream);
  if (position < 0) {
    throw RuntimeError(ErrorCode::kRtInvalidHandle, "aclrtStream",
                       "stream " + std::to_string(stream) + " does not exist on device " + std::to_string(device_));
  }
  return streams_[static_cast<size_t>(position)];
}

const DeviceTimeline::StreamState& DeviceTimeline::state(StreamId stream) const {
  return const_cast<DeviceTimeline*>(this)->state(stream);
}

int DeviceTimeline::streamPriority(StreamId stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state(stream).priority;
}

SimTimeNs DeviceTimeline::submit(StreamId stream, SimTimeNs duration) {
  const SimTimeNs issued = host_.now();
  std::lock_guard<std::mutex> lock(mutex_);
  StreamState& s = state(stream);
  const SimTimeNs start = std::max(s.clock, issued);
  s.clock = start + duration;
  s.stats.tasks += 1;
  s.stats.busyNs += duration;
  recordBusyInterval(device_, stream, start, s.clock);
  return s.clock;
}

SimTimeNs DeviceTimeline::streamClock(StreamId stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state(stream).clock;
}

bool DeviceTimeline::queryStream(StreamId stream) const { return streamClock(stream) <= host_.now(); }

void DeviceTimeline::synchronizeStream(StreamId stream) { host_.waitUntil(streamClock(stream)); }

SimTimeNs DeviceTimeline::deviceClock() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SimTimeNs latest = 0;
  for (const auto& s : streams_) latest = std::max(latest, s.clock);
  return latest;
}

void DeviceTimeline::synchronize() { host_.waitUntil(deviceClock()); }

SimTimeNs DeviceTimeline::busyNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SimTimeNs total = 0;
  for (const auto& s : streams_) total += s.stats.busyNs;
  return total;
}

StreamStats DeviceTimeline::streamStats(StreamId stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state(stream).stats;
}

void DeviceTimeline::recordEvent(Event& event, StreamId stream, bool timing) {
  // Recording a timing event is a call the host issues (it takes a little
  // host time), so two events recorded back to back are not exactly 0 ms apart.
  const SimTimeNs issued = timing ? host_.advance(kEventRecordNs) : host_.now();
  std::lock_guard<std::mutex> lock(mutex_);
  StreamState& s = state(stream);
  // An event on an idle stream completes when the host issues it.
  s.clock = std::max(s.clock, issued);
  event.device = device_;
  event.timing = timing;
  event.recorded = true;
  event.stream = stream;
  event.time = s.clock;
}

void DeviceTimeline::streamWaitEvent(StreamId stream, const Event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  StreamState& s = state(stream);
  // Waiting on an event never recorded is a no-op, as on CUDA and CANN.
  if (event.recorded) s.clock = std::max(s.clock, event.time);
}

bool DeviceTimeline::queryEvent(const Event& event) const { return !event.recorded || event.time <= host_.now(); }

void DeviceTimeline::synchronizeEvent(const Event& event) {
  if (event.recorded) host_.waitUntil(event.time);
}

double elapsedTimeMs(const Event& start, const Event& end) {
  if (!start.recorded || !end.recorded) {
    throw RuntimeError(ErrorCode::kRtEventTimestampInvalid, "aclrtEventElapsedTime",
                       "Both events must be recorded before calculating elapsed time.");
  }
  if (!start.timing || !end.timing) {
    throw RuntimeError(ErrorCode::kRtEventTimestampInvalid, "aclrtEventElapsedTime",
                       "Both events must be created with argument 'enable_timing=True'.");
  }
  const double delta = static_cast<double>(end.time) - static_cast<double>(start.time);
  return delta / 1e6;
}

void DeviceTimeline::lockForFork() { mutex_.lock(); }
void DeviceTimeline::unlockAfterFork() { mutex_.unlock(); }

}  // namespace npusim::runtime

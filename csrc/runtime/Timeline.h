// The simulated timeline: streams, events and clocks of the simulated devices.
//
// Work is executed synchronously by the caller; what is simulated is *when*
// the real chip would have run it. Each stream has a clock: a task submitted on
// a stream starts when both the stream is free and the host has issued it, and
// ends after its modelled duration. The host clock advances by the dispatch
// cost of each launch and jumps forward to the device's clock at a
// synchronization point. Events capture stream clocks, so elapsed times are
// simulated time and do not depend on how fast the host runs the kernels.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace npusim::runtime {

using SimTimeNs = uint64_t;
// Per device, encoded as torch_npu's NPUStream encodes it:
// (type << bits) | index, where bits is 5 (32 streams per pool) or 3
// (STREAMS_PER_DEVICE=8) and the type is DEFAULT 0 (index 0: id 0),
// SECONDARY 1, SYNCLAUNCH 2 (4 streams), NORMAL 3, HIGH 4 (priority pools).
using StreamId = int64_t;

// The simulated time of the host thread(s) that issue work. One per process:
// the real stack's first-stage dispatch is one queue per process.
class HostClock {
 public:
  SimTimeNs now() const noexcept { return now_.load(std::memory_order_acquire); }
  // Host work (dispatch, Python) that takes `duration`; returns the new time.
  SimTimeNs advance(SimTimeNs duration) noexcept;
  // A blocking wait for the device: the host resumes at `time` at the earliest.
  void waitUntil(SimTimeNs time) noexcept;

 private:
  std::atomic<SimTimeNs> now_{0};
};

// A recorded point on a stream. Plain data owned by the caller.
struct Event {
  int device = -1;
  bool timing = false;     // created with enable_timing
  bool recorded = false;
  StreamId stream = 0;
  SimTimeNs time = 0;      // completion time of the work recorded before it
};

struct StreamStats {
  uint64_t tasks = 0;
  SimTimeNs busyNs = 0;
};

class DeviceTimeline {
 public:
  // fork() support (Runtime's pthread_atfork handlers): held across fork so
  // that the child never inherits the lock held by a thread it does not have.
  void lockForFork();
  void unlockAfterFork();
  static constexpr int kDefaultStreamsPerPool = 32;
  static constexpr int kNormalPriority = 0;
  static constexpr int kHighPriority = -1;
  // Host time of recording a timing event (npusim's working value: about a
  // microsecond, what back-to-back events measure on GPUs).
  static constexpr SimTimeNs kEventRecordNs = 1'000;
  static constexpr int kSyncLaunchStreams = 4;
  enum class StreamType : int { kDefault = 0, kSecondary = 1, kSyncLaunch = 2, kNormal = 3, kHigh = 4 };

  DeviceTimeline(int device, HostClock& host, int streamsPerPool = kDefaultStreamsPerPool);

  int device() const noexcept { return device_; }
  int streamsPerPool() const noexcept { return streamsPerPool_; }
  static constexpr StreamId defaultStream() noexcept { return 0; }

  // Pool streams are handed out round-robin, as torch_npu's NPUStream does.
  StreamId streamFromPool(bool highPriority);
  // torch_npu's SyncLaunchStream pool: 4 streams, handed out round-robin,
  // whose tasks bypass the task queue.
  StreamId syncLaunchStream();
  bool isValidStream(StreamId stream) const noexcept;
  bool isSyncLaunch(StreamId stream) const noexcept;
  StreamId makeStreamId(StreamType type, int index) const noexcept;
  // Priority as PyTorch reports it: 0 normal, -1 high. Throws for bad ids.
  int streamPriority(StreamId stream) const;

  // Charges a task of `duration` to `stream`; returns its simulated end time.
  SimTimeNs submit(StreamId stream, SimTimeNs duration);
  SimTimeNs streamClock(StreamId stream) const;
  bool queryStream(StreamId stream) const;      // all its work done by host time
  void synchronizeStream(StreamId stream);      // host waits for the stream
  void synchronize();                            // host waits for every stream
  SimTimeNs deviceClock() const;                 // latest end time of any stream
  SimTimeNs busyNs() const;                      // sum of task durations
  StreamStats streamStats(StreamId stream) const;

  void recordEvent(Event& event, StreamId stream, bool timing);
  void streamWaitEvent(StreamId stream, const Event& event);
  bool queryEvent(const Event& event) const;
  void synchronizeEvent(const Event& event);

  HostClock& hostClock() noexcept { return host_; }

 private:
  struct StreamState {
    int priority;
    SimTimeNs clock = 0;
    StreamStats stats;
  };
  // Position of `stream` in streams_, -1 for an id that names no stream.
  int64_t slot(StreamId stream) const noexcept;
  StreamState& state(StreamId stream);
  const StreamState& state(StreamId stream) const;

  int device_;
  HostClock& host_;
  int streamsPerPool_;
  mutable std::mutex mutex_;
  int indexBits_;
  // [0] default, normal pool, high pool, sync-launch pool, secondary.
  std::vector<StreamState> streams_;
  uint32_t nextNormal_ = 0;
  uint32_t nextHigh_ = 0;
  uint32_t nextSyncLaunch_ = 0;
};

// Milliseconds of simulated time between two recorded timing events, as
// Event.elapsed_time reports it. Throws RuntimeError(107006) when either was
// not recorded or not created with timing.
double elapsedTimeMs(const Event& start, const Event& end);

}  // namespace npusim::runtime

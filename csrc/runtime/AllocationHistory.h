// The allocation history of one caching allocator, as torch_npu's
// _record_memory_history keeps it: a ring of trace entries (alloc,
// free_requested, free_completed, segment_alloc, segment_free, oom,
// snapshot) holding at most max_entries, each with the stack of the call
// that caused it when the recording level asks for stacks.
//
// Stacks are opaque here (the runtime knows nothing of Python or torch): the
// layer above installs a StackRecorder that captures one and returns it as a
// StackContext, and reads it back when it builds the snapshot.
//
// recording() is one relaxed atomic load, so that an allocator with history
// off pays nothing more on its hot path. Everything else is called with the
// owning allocator's mutex held (configure, record, entries), except
// captureStack(), which must run outside it: capturing a Python stack takes
// the GIL, and a thread holding the GIL may be waiting for the allocator.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace npusim::runtime {

// A captured call stack; the layer that captured it knows its real type.
class StackContext {
 public:
  virtual ~StackContext() = default;
};

using StackRecorder = std::function<std::shared_ptr<StackContext>()>;

// Which events keep a stack (torch_npu's RecordContext, in its order).
enum class RecordContext { kNever = 0, kState = 1, kAlloc = 2, kAll = 3 };

enum class TraceAction { kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kOom, kSnapshot };

// The name torch's memory snapshot gives an action ("alloc", "oom", ...).
const char* traceActionName(TraceAction action);

struct TraceEntry {
  TraceAction action = TraceAction::kAlloc;
  int device = 0;
  uintptr_t addr = 0;  // for kOom: the bytes the device still had free
  size_t size = 0;
  int64_t stream = 0;
  std::pair<uint64_t, uint64_t> pool{0, 0};  // the private pool, {0, 0} for the default pools
  int64_t timeUs = 0;                        // wall clock, microseconds since the epoch
  std::shared_ptr<StackContext> stack;
};

class AllocationHistory {
 public:
  // enabled=false stops recording and forgets the ring; `recorder` may be
  // empty only with `when` = kNever. The ring is cleared either way, as
  // torch_npu's recordHistory clears it.
  void configure(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when);

  bool recording() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  // A stack when recording at `level` or above; nullptr otherwise. Call it
  // outside the allocator's mutex.
  std::shared_ptr<StackContext> captureStack(RecordContext level) const;

  // Appends to the ring (overwriting the oldest entry once it holds
  // maxEntries). The entry keeps its stack only from level kAlloc on.
  void record(TraceEntry entry);

  // The ring, oldest first.
  std::vector<TraceEntry> entries() const;

  size_t maxEntries() const noexcept { return maxEntries_; }
  RecordContext recordContext() const;

 private:
  std::atomic<bool> enabled_{false};
  // captureStack runs without the allocator's mutex: it reads the recorder
  // and the level under a lock of its own.
  mutable std::mutex recorderMutex_;
  std::shared_ptr<const StackRecorder> recorder_;
  RecordContext when_ = RecordContext::kNever;
  size_t maxEntries_ = 1;
  size_t next_ = 0;  // where the next entry goes once the ring is full
  std::vector<TraceEntry> ring_;
};

}  // namespace npusim::runtime

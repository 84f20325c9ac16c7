#include "runtime/AllocationHistory.h"

#include <algorithm>
#include <chrono>

namespace npusim::runtime {

const char* traceActionName(TraceAction action) {
  switch (action) {
    case TraceAction::kAlloc: return "alloc";
    case TraceAction::kFreeRequested: return "free_requested";
    case TraceAction::kFreeCompleted: return "free_completed";
    case TraceAction::kSegmentAlloc: return "segment_alloc";
    case TraceAction::kSegmentFree: return "segment_free";
    case TraceAction::kOom: return "oom";
    case TraceAction::kSnapshot: return "snapshot";
  }
  return "unknown";
}

void AllocationHistory::configure(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when) {
  {
    std::lock_guard<std::mutex> lock(recorderMutex_);
    recorder_ = enabled && recorder ? std::make_shared<const StackRecorder>(std::move(recorder)) : nullptr;
    when_ = enabled && recorder_ ? when : RecordContext::kNever;
  }
  maxEntries_ = std::max<size_t>(1, maxEntries);
  next_ = 0;
  ring_.clear();
  ring_.shrink_to_fit();
  enabled_.store(enabled, std::memory_order_relaxed);
}

RecordContext AllocationHistory::recordContext() const {
  std::lock_guard<std::mutex> lock(recorderMutex_);
  return when_;
}

std::shared_ptr<StackContext> AllocationHistory::captureStack(RecordContext level) const {
  std::shared_ptr<const StackRecorder> recorder;
  {
    std::lock_guard<std::mutex> lock(recorderMutex_);
    if (when_ < level || !recorder_) return nullptr;
    recorder = recorder_;
  }
  return (*recorder)();
}

void AllocationHistory::record(TraceEntry entry) {
  if (!recording()) return;
  if (recordContext() < RecordContext::kAlloc) entry.stack = nullptr;
  entry.timeUs = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  if (ring_.size() < maxEntries_) {
    ring_.push_back(std::move(entry));
    return;
  }
  ring_[next_] = std::move(entry);
  next_ = (next_ + 1) % maxEntries_;
}

std::vector<TraceEntry> AllocationHistory::entries() const {
  std::vector<TraceEntry> ordered;
  ordered.reserve(ring_.size());
  ordered.insert(ordered.end(), ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  ordered.insert(ordered.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  return ordered;
}

}  // namespace npusim::runtime

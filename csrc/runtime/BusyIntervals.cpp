#include "runtime/BusyIntervals.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace npusim::runtime {
namespace {

struct Recorder {
  std::mutex mutex;
  std::map<std::pair<int, int64_t>, std::vector<BusyInterval>> streams;
  std::atomic<bool> truncated{false};
  std::atomic<bool> enabled{false};
};

Recorder& recorder() {
  static Recorder instance;
  return instance;
}

}  // namespace

void enableBusyIntervals(bool enabled) noexcept { recorder().enabled.store(enabled, std::memory_order_release); }

bool busyIntervalsEnabled() noexcept { return recorder().enabled.load(std::memory_order_acquire); }

void recordBusyInterval(int device, int64_t stream, uint64_t begin, uint64_t end) {
  if (end <= begin) return;
  Recorder& r = recorder();
  if (!r.enabled.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& intervals = r.streams[{device, stream}];
  if (!intervals.empty() && begin <= intervals.back().end) {
    intervals.back().end = std::max(intervals.back().end, end);
    return;
  }
  if (intervals.size() >= kMaxIntervalsPerStream) {
    r.truncated.store(true, std::memory_order_relaxed);
    return;
  }
  intervals.push_back({begin, end});
}

std::vector<BusyInterval> busyIntervals(int device, int64_t stream) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.streams.find({device, stream});
  return found == r.streams.end() ? std::vector<BusyInterval>{} : found->second;
}

std::vector<int64_t> streamsWithIntervals(int device) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<int64_t> out;
  for (const auto& [key, intervals] : r.streams) {
    if (key.first == device && !intervals.empty()) out.push_back(key.second);
  }
  return out;
}

bool busyIntervalsTruncated() noexcept { return recorder().truncated.load(std::memory_order_relaxed); }

void clearBusyIntervals() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.clear();
  r.truncated.store(false, std::memory_order_relaxed);
}

uint64_t overlapLength(const std::vector<BusyInterval>& a, const std::vector<BusyInterval>& b) noexcept {
  uint64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t begin = std::max(a[i].begin, b[j].begin);
    const uint64_t end = std::min(a[i].end, b[j].end);
    if (end > begin) total += end - begin;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<BusyInterval> unionOf(const std::vector<std::vector<BusyInterval>>& lists) {
  std::vector<BusyInterval> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  std::sort(all.begin(), all.end(), [](const BusyInterval& x, const BusyInterval& y) { return x.begin < y.begin; });
  std::vector<BusyInterval> merged;
  for (const auto& interval : all) {
    if (!merged.empty() && interval.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, interval.end);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

}  // namespace npusim::runtime

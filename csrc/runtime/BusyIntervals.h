// When each stream of the simulated timeline was busy: the intervals its
// tasks occupied, merged where they touch. The performance report needs them
// to say how much communication (on HCCL streams) ran while compute streams
// were busy, which stream clocks and busy totals alone cannot tell when the
// device idles between tasks.
//
// Recorded by DeviceTimeline::submit for every stream once a layer that
// needs them turns recording on (the hccl backend, at its first collective:
// a program without communication pays nothing); bounded per stream
// (kMaxIntervalsPerStream, after which recording stops and `truncated` says
// so); cleared with the report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace npusim::runtime {

struct BusyInterval {
  uint64_t begin = 0;
  uint64_t end = 0;
};

constexpr size_t kMaxIntervalsPerStream = size_t{1} << 20;

void enableBusyIntervals(bool enabled) noexcept;
bool busyIntervalsEnabled() noexcept;

void recordBusyInterval(int device, int64_t stream, uint64_t begin, uint64_t end);
// The intervals of `stream`, in time order (tasks of one stream never overlap).
std::vector<BusyInterval> busyIntervals(int device, int64_t stream);
// The streams of `device` that have recorded intervals.
std::vector<int64_t> streamsWithIntervals(int device);
bool busyIntervalsTruncated() noexcept;
void clearBusyIntervals();

// Total length of the intersection of `a` and `b` (each sorted, non-overlapping).
uint64_t overlapLength(const std::vector<BusyInterval>& a, const std::vector<BusyInterval>& b) noexcept;
// The union of several sorted interval lists, sorted and merged.
std::vector<BusyInterval> unionOf(const std::vector<std::vector<BusyInterval>>& lists);

}  // namespace npusim::runtime

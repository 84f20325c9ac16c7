// Collects the backend's device activity while a profiler session records,
// stamped with the real wall-clock time and the host operator (its Kineto
// correlation id) that launched it.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/timing/DeviceActivity.h"

namespace npusim::profiler {

struct RecordedActivity {
  backend::DeviceActivity activity;
  int64_t wallNs = 0;        // system clock, ns since the epoch (Kineto's clock)
  uint64_t correlation = 0;  // innermost host operator, 0 when none
  int32_t threadId = 0;
};

// Starts recording (drops anything recorded before).
void startRecording();
// Stops recording and hands over what was recorded.
std::vector<RecordedActivity> stopRecording();

// The host operators being run on this thread, innermost last (Kineto tells
// the session of each one it enters and leaves).
void pushCorrelation(uint64_t id);
void popCorrelation();

}  // namespace npusim::profiler

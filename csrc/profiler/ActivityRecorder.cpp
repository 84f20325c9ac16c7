#include "profiler/ActivityRecorder.h"

#include <chrono>
#include <mutex>

#include <ThreadUtil.h>

namespace npusim::profiler {
namespace {

std::mutex recordMutex;
std::vector<RecordedActivity>& records() {
  static std::vector<RecordedActivity> all;
  return all;
}

thread_local std::vector<uint64_t> correlationStack;

void record(const backend::DeviceActivity& activity) {
  RecordedActivity entry;
  entry.activity = activity;
  entry.wallNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  entry.correlation = correlationStack.empty() ? 0 : correlationStack.back();
  entry.threadId = libkineto::systemThreadId();
  std::lock_guard<std::mutex> lock(recordMutex);
  records().push_back(std::move(entry));
}

}  // namespace

void startRecording() {
  {
    std::lock_guard<std::mutex> lock(recordMutex);
    records().clear();
    records().reserve(4096);
  }
  backend::setDeviceActivitySink(&record);
}

std::vector<RecordedActivity> stopRecording() {
  backend::setDeviceActivitySink(nullptr);
  std::lock_guard<std::mutex> lock(recordMutex);
  std::vector<RecordedActivity> out;
  out.swap(records());
  return out;
}

void pushCorrelation(uint64_t id) { correlationStack.push_back(id); }

void popCorrelation() {
  if (!correlationStack.empty()) correlationStack.pop_back();
}

}  // namespace npusim::profiler

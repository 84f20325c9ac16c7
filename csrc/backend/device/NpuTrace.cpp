#include "backend/device/NpuTrace.h"

#include <atomic>

namespace npusim::backend {
namespace {

std::atomic<int> activeMode{static_cast<int>(TraceMode::kOff)};
std::atomic<TraceSink> activeSink{nullptr};
// A callback that itself allocates or synchronizes must not re-enter the trace.
thread_local bool inSink = false;

void deliver(TraceKind kind, uintptr_t first, uintptr_t second, const char* name) noexcept {
  const TraceSink sink = activeSink.load(std::memory_order_acquire);
  if (sink == nullptr || inSink) return;
  inSink = true;
  sink(kind, first, second, name);
  inSink = false;
}

}  // namespace

void activateTrace(TraceMode mode, TraceSink sink) {
  activeSink.store(sink, std::memory_order_release);
  activeMode.store(static_cast<int>(mode), std::memory_order_release);
}

TraceMode traceMode() noexcept { return static_cast<TraceMode>(activeMode.load(std::memory_order_relaxed)); }

void trace(TraceKind kind, uintptr_t first, uintptr_t second) noexcept {
  if (traceMode() != TraceMode::kStream) return;
  deliver(kind, first, second, nullptr);
}

void traceKernel(TraceKind kind, const char* name) noexcept {
  if (traceMode() != TraceMode::kKernel) return;
  deliver(kind, 0, 0, name);
}

}  // namespace npusim::backend

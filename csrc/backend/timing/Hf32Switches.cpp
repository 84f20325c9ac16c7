#include "backend/timing/Hf32Switches.h"

#include <atomic>

namespace npusim::backend {
namespace {

std::atomic<bool> matmulSwitch{false};
std::atomic<bool> convolutionSwitch{true};
// -1: no override on this thread; 0 / 1: ScopedMatmulHf32 in force.
thread_local int matmulOverride = -1;

}  // namespace

void setHf32(bool matmul, bool convolution) noexcept {
  matmulSwitch.store(matmul, std::memory_order_relaxed);
  convolutionSwitch.store(convolution, std::memory_order_relaxed);
}

bool hf32Matmul() noexcept {
  return matmulOverride >= 0 ? matmulOverride == 1 : matmulSwitch.load(std::memory_order_relaxed);
}

ScopedMatmulHf32::ScopedMatmulHf32(bool enabled) noexcept : previous_(matmulOverride) { matmulOverride = enabled ? 1 : 0; }
ScopedMatmulHf32::~ScopedMatmulHf32() { matmulOverride = previous_; }
bool hf32Convolution() noexcept { return convolutionSwitch.load(std::memory_order_relaxed); }

perf::CostOptions hf32CostOptions() noexcept {
  perf::CostOptions options;
  options.allowHf32Matmul = hf32Matmul();
  options.allowHf32Conv = hf32Convolution();
  return options;
}

}  // namespace npusim::backend

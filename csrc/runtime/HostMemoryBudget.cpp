#include "runtime/HostMemoryBudget.h"

#include <algorithm>

#include "runtime/CachingAllocator.h"
#include "runtime/HostMemory.h"

namespace npusim::runtime {
namespace {

uint64_t saturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// The smaller of "free at the first check" and "free now", each with what
// npusim had committed at that time added back.
uint64_t sourceLimit(uint64_t baselineFree, uint64_t baselineCommitted, uint64_t nowFree, uint64_t nowCommitted) {
  if (nowFree == UINT64_MAX) return UINT64_MAX;
  return std::min(saturatingAdd(baselineFree, baselineCommitted), saturatingAdd(nowFree, nowCommitted));
}

}  // namespace

HostMemoryBudget& HostMemoryBudget::instance() {
  static auto* budget = new HostMemoryBudget();
  return *budget;
}

uint64_t HostMemoryBudget::safetyMargin(uint64_t hostBytes) noexcept {
  return std::min<uint64_t>(hostBytes / 16, uint64_t{1} << 30);
}

std::optional<std::string> HostMemoryBudget::commit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t committed = committed_.load(std::memory_order_relaxed);
  if (bytes < kCheckedBytes && uncheckedSinceReading_ + bytes < kUncheckedAllowance) {
    uncheckedSinceReading_ += bytes;
    committed_.fetch_add(bytes, std::memory_order_relaxed);
    return std::nullopt;
  }
  const HostMemoryLimit host = hostMemoryLimit();
  if (!baselineTaken_) {
    baselineTaken_ = true;
    baselineMemAvailable_ = host.memAvailableBytes;
    baselineCgroupRemaining_ = host.cgroupRemainingBytes;
    baselineCommitted_ = committed;
  }
  const uint64_t hostLimit =
      std::min(sourceLimit(baselineMemAvailable_, baselineCommitted_, host.memAvailableBytes, committed),
               sourceLimit(baselineCgroupRemaining_, baselineCommitted_, host.cgroupRemainingBytes, committed));
  if (hostLimit != UINT64_MAX) {
    const uint64_t margin = safetyMargin(hostLimit);
    const uint64_t usable = hostLimit - margin;
    if (committed > usable || bytes > usable - committed) {
      return "npusim holds " + formatMemorySize(committed) +
             " of host memory for device and pinned memory (all devices), and the host can give " +
             formatMemorySize(hostLimit) + " in all, less a safety margin of " + formatMemorySize(margin) + " (" +
             describeHostMemoryLimit(host) + ")";
    }
  }
  uncheckedSinceReading_ = 0;
  committed_.fetch_add(bytes, std::memory_order_relaxed);
  return std::nullopt;
}

void HostMemoryBudget::release(uint64_t bytes) noexcept { committed_.fetch_sub(bytes, std::memory_order_relaxed); }

void HostMemoryBudget::resetForTesting() {
  std::lock_guard<std::mutex> lock(mutex_);
  baselineTaken_ = false;
  uncheckedSinceReading_ = 0;
}

}  // namespace npusim::runtime

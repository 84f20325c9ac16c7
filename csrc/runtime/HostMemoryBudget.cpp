#include "runtime/HostMemoryBudget.h"

#include <algorithm>

#include "runtime/HostMemory.h"
#include "runtime/MemorySize.h"

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

std::optional<std::string> HostMemoryBudget::commit(uint64_t bytes, uint64_t uncommittedResident) {
  constexpr auto relaxed = std::memory_order_relaxed;
  if (bytes < kCheckedBytes && uncheckedSinceReading_.fetch_add(bytes, relaxed) + bytes < kUncheckedAllowance) {
    committed_.fetch_add(bytes, relaxed);
    return std::nullopt;
  }
  const HostMemoryLimit host = hostMemoryLimit();
  uint64_t committed = committed_.load(relaxed);
  if (!baselineTaken_.load(std::memory_order_acquire)) {
    baselineMemAvailable_.store(host.memAvailableBytes, relaxed);
    baselineCgroupRemaining_.store(host.cgroupRemainingBytes, relaxed);
    baselineCommitted_.store(committed, relaxed);
    baselineTaken_.store(true, std::memory_order_release);
  }
  const uint64_t baselineCommitted = baselineCommitted_.load(relaxed);
  while (true) {
    const uint64_t held = saturatingAdd(committed, uncommittedResident);
    const uint64_t hostLimit = std::min(
        sourceLimit(baselineMemAvailable_.load(relaxed), baselineCommitted, host.memAvailableBytes, committed),
        sourceLimit(baselineCgroupRemaining_.load(relaxed), baselineCommitted, host.cgroupRemainingBytes, committed));
    if (hostLimit != UINT64_MAX) {
      const uint64_t margin = safetyMargin(hostLimit);
      const uint64_t usable = hostLimit - margin;
      if (held > usable || bytes > usable - held) {
        std::string holds = "npusim holds " + formatMemorySize(committed) +
                            " of host memory for device and pinned memory (all devices)";
        if (uncommittedResident > 0) {
          holds += " and " + formatMemorySize(uncommittedResident) + " written into lazily granted device memory";
        }
        return holds + ", and the host can give " + formatMemorySize(hostLimit) + " in all, less a safety margin of " +
               formatMemorySize(margin) + " (" + describeHostMemoryLimit(host) + ")";
      }
    }
    // Another thread committed meanwhile: check again with its share counted.
    if (committed_.compare_exchange_weak(committed, committed + bytes, relaxed)) break;
  }
  uncheckedSinceReading_.store(0, relaxed);
  return std::nullopt;
}

std::optional<std::string> HostMemoryBudget::roomForResident(uint64_t uncommittedResident) {
  // A check of zero bytes that always reads the host.
  uncheckedSinceReading_.store(kUncheckedAllowance, std::memory_order_relaxed);
  return commit(0, uncommittedResident);
}

void HostMemoryBudget::release(uint64_t bytes) noexcept { committed_.fetch_sub(bytes, std::memory_order_relaxed); }

void HostMemoryBudget::resetForTesting() {
  baselineTaken_.store(false, std::memory_order_release);
  uncheckedSinceReading_.store(0, std::memory_order_relaxed);
}

}  // namespace npusim::runtime

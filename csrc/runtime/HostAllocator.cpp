#include "runtime/HostAllocator.h"

#include <pthread.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/Error.h"
#include "runtime/HostMemoryBudget.h"

namespace npusim::runtime {

namespace {

constexpr size_t kMinHostBlock = 64;
constexpr size_t kPageSize = 4096;

void update(Stat& stat, int64_t amount) {
  stat.current += amount;
  stat.peak = std::max(stat.peak, stat.current);
  if (amount > 0) stat.allocated += amount;
  if (amount < 0) stat.freed -= amount;
}

void* hostAllocate(size_t size) {
  void* ptr = nullptr;
  size_t alignment = size >= kPageSize ? kPageSize : kMinHostBlock;
  if (::posix_memalign(&ptr, alignment, size) != 0) return nullptr;
  return ptr;
}

}  // namespace

HostAllocator::HostAllocator(const AllocatorConfig& config)
    : maxRoundThreshold_(config.pinnedMaxRoundThreshold),
      maxCachedSize_(config.pinnedMaxCachedSize),
      expandableSegments_(config.pinMemoryExpandableSegments) {}

HostAllocator::~HostAllocator() {
  for (const auto& [base, block] : blocks_) {
    std::free(reinterpret_cast<void*>(base));
    HostMemoryBudget::instance().release(block.size);
  }
}

HostAllocator& HostAllocator::instance() {
  static HostAllocator* allocator = [] {
    auto* created = new HostAllocator(AllocatorConfig::fromEnvironment());
    // Held across fork() so that a child never inherits it locked by a thread
    // it does not have; pinned host memory stays valid in the child.
    ::pthread_atfork([] { HostAllocator::instance().mutex_.lock(); },
                     [] { HostAllocator::instance().mutex_.unlock(); },
                     [] { HostAllocator::instance().mutex_.unlock(); });
    return created;
  }();
  return *allocator;
}

size_t HostAllocator::roundSize(size_t bytes) const {
  if (bytes > maxRoundThreshold_ || bytes > (size_t{1} << 62)) {
    return (bytes + kMinHostBlock - 1) / kMinHostBlock * kMinHostBlock;
  }
  return std::max(kMinHostBlock, std::bit_ceil(bytes));
}

void* HostAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t size = roundSize(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  uintptr_t base = 0;
  auto cached = cached_.find(size);
  if (cached != cached_.end() && !cached->second.empty()) {
    base = cached->second.back();
    cached->second.pop_back();
  } else {
    // Pinned memory is host memory like the simulated devices' memory: it
    // counts against the same HostMemoryBudget.
    std::optional<std::string> refusal;
    auto commitAndAllocate = [&]() -> void* {
      refusal = HostMemoryBudget::instance().commit(size);
      if (refusal) return nullptr;
      void* allocated = hostAllocate(size);
      if (allocated == nullptr) HostMemoryBudget::instance().release(size);
      return allocated;
    };
    void* ptr = commitAndAllocate();
    if (ptr == nullptr && !cached_.empty()) {
      // Give the cache back to the host and try once more.
      for (auto& [cachedSize, bases] : cached_) {
        for (uintptr_t cachedBase : bases) releaseLocked(cachedBase, cachedSize);
      }
      cached_.clear();
      ptr = commitAndAllocate();
    }
    if (ptr == nullptr) {
      throw RuntimeError(ErrorCode::kRtMemoryAllocation, "aclrtMallocHost",
                         "the host could not provide " + std::to_string(size) + " bytes of pinned memory" +
                             (refusal ? ": " + *refusal : std::string()));
    }
    base = reinterpret_cast<uintptr_t>(ptr);
    blocks_.emplace(base, Block{size, false});
    stats_.num_host_alloc += 1;
    update(stats_.reserved_bytes, static_cast<int64_t>(size));
  }
  blocks_[base].allocated = true;
  update(stats_.allocations, 1);
  update(stats_.allocated_bytes, static_cast<int64_t>(size));
  return reinterpret_cast<void*>(base);
}

void HostAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  auto it = blocks_.find(base);
  if (it == blocks_.end() || !it->second.allocated) {
    char text[32];
    std::snprintf(text, sizeof(text), "%p", ptr);
    throw RuntimeError(ErrorCode::kRtInvalidHandle, "aclrtFreeHost",
                       std::string("invalid pinned host pointer: ") + text +
                           (it == blocks_.end() ? " was not allocated by the host allocator" : " is already free"));
  }
  const size_t size = it->second.size;
  it->second.allocated = false;
  update(stats_.allocations, -1);
  update(stats_.allocated_bytes, -static_cast<int64_t>(size));
  if (size > maxCachedSize_) {
    releaseLocked(base, size);
  } else {
    cached_[size].push_back(base);
  }
}

void HostAllocator::releaseLocked(uintptr_t base, size_t size) {
  blocks_.erase(base);
  std::free(reinterpret_cast<void*>(base));
  HostMemoryBudget::instance().release(size);
  stats_.num_host_free += 1;
  update(stats_.reserved_bytes, -static_cast<int64_t>(size));
}

bool HostAllocator::isPinned(const void* ptr) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return false;
  --it;
  return address < it->first + it->second.size;
}

size_t HostAllocator::allocationSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  return it != blocks_.end() && it->second.allocated ? it->second.size : 0;
}

void HostAllocator::emptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, bases] : cached_) {
    for (uintptr_t base : bases) releaseLocked(base, size);
  }
  cached_.clear();
}

HostMemoryStats HostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HostAllocator::resetPeakStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Stat* stat : {&stats_.allocations, &stats_.allocated_bytes, &stats_.reserved_bytes}) stat->peak = stat->current;
}

void HostAllocator::resetAccumulatedStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Stat* stat : {&stats_.allocations, &stats_.allocated_bytes, &stats_.reserved_bytes}) {
    stat->allocated = 0;
    stat->freed = 0;
  }
  stats_.num_host_alloc = 0;
  stats_.num_host_free = 0;
}

}  // namespace npusim::runtime

// The caching allocator for pinned host memory (torch's pin_memory() on an
// NPU build), behaving like PyTorch's CachingHostAllocator:
//
// - A request is rounded up to a power of two (at least 64 bytes), unless it
//   is larger than pinned_max_round_threshold_mb, in which case it keeps its
//   size (rounded to 64 bytes).
// - A freed block is cached and handed out again for a request of the same
//   rounded size; a block larger than pinned_max_cached_size_mb goes back to
//   the host at once.
// - emptyCache() gives every cached block back.
//
// On the simulated device there is no DMA engine to pin for, so the memory is
// ordinary page-aligned host memory; what matters is that
// isPinned(ptr) knows it. Blocks are not tied to streams (a simulated copy
// completes when it is issued). All members are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"

namespace npusim::runtime {

struct HostMemoryStats {
  Stat allocations;       // live allocations
  Stat allocated_bytes;   // bytes of live allocations (rounded sizes)
  Stat reserved_bytes;    // bytes held from the host: live plus cached
  int64_t num_host_alloc = 0;  // blocks obtained from the host
  int64_t num_host_free = 0;   // blocks given back to the host
};

class HostAllocator {
 public:
  explicit HostAllocator(const AllocatorConfig& config = AllocatorConfig());
  ~HostAllocator();  // gives every block back, live ones included
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // The process-wide allocator, configured from the environment on first
  // use (throws ConfigError there for a malformed configuration). Never
  // destroyed, so pinned tensors freed during exit stay valid.
  static HostAllocator& instance();

  // 0 bytes gives nullptr. Throws RuntimeError(kRtMemoryAllocation,
  // "aclrtMallocHost") when the host has no memory left.
  void* allocate(size_t bytes);
  // nullptr is ignored; anything but a pointer from allocate() throws
  // RuntimeError(kRtInvalidHandle).
  void free(void* ptr);
  // True for any address inside a live or cached block.
  bool isPinned(const void* ptr) const;
  // Rounded size of the live allocation starting at ptr (0 if there is none).
  size_t allocationSize(const void* ptr) const;

  void emptyCache();
  HostMemoryStats stats() const;
  void resetPeakStats();
  void resetAccumulatedStats();

  size_t roundSize(size_t bytes) const;
  // pin_memory_expandable_segments of the configuration it was made with.
  bool expandableSegments() const { return expandableSegments_; }

 private:
  struct Block {
    size_t size = 0;
    bool allocated = false;
  };
  void releaseLocked(uintptr_t base, size_t size);

  const size_t maxRoundThreshold_;
  const size_t maxCachedSize_;
  const bool expandableSegments_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;                             // every block, live or cached, by address
  std::unordered_map<size_t, std::vector<uintptr_t>> cached_;     // free blocks by size
  HostMemoryStats stats_;
};

}  // namespace npusim::runtime

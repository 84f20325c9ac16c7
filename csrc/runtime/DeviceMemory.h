// The "HBM" of one simulated device: host memory handed out in device-sized
// pieces, with the device's capacity enforced.
//
// Each allocation is its own anonymous private mapping made with
// MAP_NORESERVE, so the host commits only the pages a program touches and a
// 64 GB simulated HBM works on a smaller host as long as little of it is
// written. Freeing unmaps, so the host gets the pages back at once. Pointers
// are page aligned (at least 4 KiB, so more than the 512 bytes aclrtMalloc
// guarantees). A mapping made outside estimate-only mode is committed to the
// process-wide HostMemoryBudget when the host could back it if it were written.
// One it could not back but the chip has room for is granted uncommitted
// (allocateUncommitted: lazily committed pages, as the chip would give it);
// its resident pages count in every later check. All members are thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace npusim::runtime {

class DeviceMemory {
 public:
  DeviceMemory(int device, size_t capacityBytes);
  ~DeviceMemory();  // unmaps whatever is still allocated
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Returns nullptr (and changes nothing) when used() + bytes would exceed the
  // capacity, or for 0 bytes; the caller decides whether that is an OOM.
  // When the host cannot back the block (HostMemoryBudget), it returns
  // nullptr with the reason in *hostRefusal if the caller passes one, and
  // throws RuntimeError(kRtMemoryAllocation, "aclrtMalloc") otherwise; the
  // same error comes when the host refuses the mapping itself.
  void* allocate(size_t bytes, std::string* hostRefusal = nullptr);

  // A segment that the host could not back in full, for a request that fits
  // the chip: mapped without a commitment, its pages committed by the kernel
  // as they are written. Refused (nullptr and the reason) only when what the
  // process holds now, resident pages included, leaves the host no room.
  // Announces the first such grant once (stderr and the plog).
  void* allocateUncommitted(size_t bytes, std::string* hostRefusal);

  // Host memory resident in the uncommitted segments of every device (mincore).
  static uint64_t residentUncommittedBytes();

  // `bytes` must be the size given to allocate(). Throws
  // RuntimeError(kRtMemoryFree, "aclrtFree") for a pointer this object did not
  // hand out or a wrong size; nullptr is ignored.
  void free(void* ptr, size_t bytes);

  int device() const noexcept { return device_; }
  size_t capacity() const noexcept { return capacity_; }
  size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  size_t freeBytes() const noexcept;
  // True when `ptr` lies inside memory handed out by allocate() and not yet
  // freed (for "which device owns this pointer").
  bool contains(const void* ptr) const;
  // Bytes from `ptr` to the end of the allocation holding it; 0 when `ptr` is not inside
  // memory handed out by allocate() (AscendCL's copies check their ranges with it).
  size_t bytesFrom(const void* ptr) const;
  // Estimate-only runs: allocations beyond the capacity succeed (the memory
  // is reserved address space that nothing touches), so that a program too
  // big for the chip can run to the end and report how much it would need.
  void setOvercommit(bool allowed) noexcept { overcommit_.store(allowed, std::memory_order_relaxed); }
  bool overcommit() const noexcept { return overcommit_.load(std::memory_order_relaxed); }
  // fork() support (Runtime's pthread_atfork handlers): held across fork so
  // that the child never inherits the lock held by a thread it does not have.
  void lockForFork();
  void unlockAfterFork();

 private:
  const int device_;
  const size_t capacity_;
  std::atomic<size_t> used_{0};
  std::atomic<bool> overcommit_{false};
  mutable std::mutex mutex_;
  struct Mapping {
    size_t bytes = 0;
    bool hostCommitted = false;  // counted in the HostMemoryBudget (not estimate-only)
    bool uncommitted = false;    // granted beyond what the host can back (allocateUncommitted)
  };
  uint64_t residentUncommitted() const;
  void* map(size_t bytes, bool hostCommitted, bool uncommitted);
  std::unordered_map<void*, Mapping> mappings_;  // guarded by mutex_
};

}  // namespace npusim::runtime

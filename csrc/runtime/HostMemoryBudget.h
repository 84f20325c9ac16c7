// The host memory the process has committed to simulated device memory (all
// devices) and pinned host memory, checked against what the host can give.
//
// Device segments are MAP_NORESERVE mappings, so the kernel counts only the
// pages a program touches; a program that fits the chip but not the host then
// dies by the OOM killer once it writes enough. Counting every reserved
// segment as committed and refusing the one that would take the host past
// its limit turns that kill into an error while the process can still react.
//
// What the host can give is the smaller of
//   - MemAvailable: min(at the first check + what was committed then,
//                       now + what is committed now)
//   - the cgroup:   min(memory.max - memory.current at the first check + what
//                       was committed then, memory.max - memory.current now +
//                       what is committed now)
// (the first term of each stops untouched commitments from counting twice as
// free; the second follows other processes that take memory meanwhile), less
// a safety margin of 1/16 of it, at most 1 GiB, for the interpreter, PyTorch's
// CPU tensors and the page cache.
//
// A segment the host could not back in full but the chip has room for is
// granted without a commitment (lazily committed pages): the kernel commits
// its pages as they are written, and later checks count what is resident.
//
// Reading /proc costs a few microseconds, so the host is read for requests of
// kCheckedBytes or more, and for smaller ones only once they add up to
// kUncheckedAllowance since the last reading. All members are thread-safe and
// lock-free (safe around fork()).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace npusim::runtime {

class HostMemoryBudget {
 public:
  static constexpr uint64_t kCheckedBytes = uint64_t{1} << 20;
  static constexpr uint64_t kUncheckedAllowance = uint64_t{64} << 20;

  // The process-wide budget (never destroyed: blocks freed during exit
  // still release into it).
  static HostMemoryBudget& instance();

  // Commits `bytes`, or commits nothing and returns the reason: "npusim holds
  // ... of host memory for device and pinned memory, the host can give ...".
  // `uncommittedResident`: host memory the process holds in device segments
  // that were granted without a commitment (DeviceMemory::allocateUncommitted),
  // counted as committed for the check.
  std::optional<std::string> commit(uint64_t bytes, uint64_t uncommittedResident = 0);
  // Whether the host still has room for what the process holds now (its
  // commitment plus `uncommittedResident`), read now; the reason otherwise.
  std::optional<std::string> roomForResident(uint64_t uncommittedResident);
  void release(uint64_t bytes) noexcept;
  uint64_t committed() const noexcept { return committed_.load(std::memory_order_relaxed); }

  // The margin kept free of a host limit of `hostBytes`.
  static uint64_t safetyMargin(uint64_t hostBytes) noexcept;

  // Tests: forget the first reading, as if the process had just started.
  void resetForTesting();

 private:
  // Atomics only, no lock: device and pinned allocations commit here while
  // holding their own locks, and a lock here would have to be ordered after
  // theirs in the fork handlers too. Two threads taking the first reading at
  // once store near-equal values, which is harmless.
  std::atomic<uint64_t> committed_{0};
  std::atomic<uint64_t> uncheckedSinceReading_{0};
  std::atomic<bool> baselineTaken_{false};
  std::atomic<uint64_t> baselineMemAvailable_{UINT64_MAX};
  std::atomic<uint64_t> baselineCgroupRemaining_{UINT64_MAX};
  std::atomic<uint64_t> baselineCommitted_{0};
};

}  // namespace npusim::runtime

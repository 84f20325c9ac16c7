// The caching allocator of one simulated device, behaving like torch_npu's
// NPUCachingAllocator (itself a port of PyTorch's CUDACachingAllocator):
//
// - Requests get 32 bytes of padding (as on Ascend 910B and older chips) and
//   are rounded up to 512 bytes, or to a power-of-two division when
//   roundup_power2_divisions says so.
// - Rounded sizes up to 1 MiB come from the small pool, which carves 2 MiB
//   segments; larger ones from the large pool: below 10 MiB they carve a
//   large segment (20 MiB unless large_segment_size_mb says otherwise), from
//   10 MiB on they get a segment of their size rounded up to 2 MiB (1 GiB with
//   page_size:1g).
// - A free block is found best-fit among the cached blocks of the same pool
//   and the same stream; a larger block is split when the remainder is worth
//   keeping (>= 512 B in the small pool, > 1 MiB in the large pool), except
//   that blocks of max_split_size or more are never split and serve only
//   requests within max_non_split_rounding of their size. Freed blocks merge
//   with free neighbours.
// - A block used on other streams (recordStream) is cached again only when
//   the work submitted on those streams before the free has completed, as
//   the StreamUseTracker reports.
// - When a segment cannot be had (device full, or the memory fraction
//   reached), the allocator frees cached oversize blocks, then synchronizes
//   the device and frees every unsplit cached block, and retries once
//   (num_alloc_retries); failing that it raises OutOfMemoryError with
//   torch_npu's text and counts num_ooms. The allocator stays usable.
// - garbage_collection_threshold (with a memory fraction set) frees the
//   least recently reused cached segments before a new one is carved.
// - With caching disabled (PYTORCH_NO_NPU_MEMORY_CACHING=1) every request gets
//   its own segment, which goes back to the device as soon as it is free; the
//   statistics keep working (npusim does better than the real stack here).
// - expandable_segments is accepted but segments are never expandable.
// - Private pools (CUDA's graph pools and torch.cuda.MemPool): between
//   beginAllocateToPool(id, filter) and endAllocateToPool(id), a request on
//   a stream the filter accepts (it runs on the allocating thread, so it may
//   also test the thread) is served only from segments of pool `id`, and the
//   blocks of those segments, once freed, serve only later requests into the
//   same pool. A pool lives while its use count (createOrIncrefPool and
//   beginAllocateToPool add one, releasePool removes one) is above zero:
//   emptyCache() leaves its segments alone. Once released, its cached
//   segments go back to the device at once and the others as soon as their
//   blocks are free; the pool is gone when it has no segment left. OOM
//   handling frees cached blocks of the default pools and of released pools.
// - When the host cannot back a new segment (HostMemoryBudget), the same
//   OOM handling runs; failing that, OutOfMemoryError names the chip's
//   capacity and the host's limits.
//
// All public members are thread-safe (one lock per allocator, a runtime::SpinLock). The
// StreamUseTracker is called with that lock held and must not call back
// into the allocator. The DeviceMemory and the StreamUseTracker must outlive
// the allocator; its destructor gives every segment back to the DeviceMemory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/AllocationHistory.h"
#include "runtime/AllocatorConfig.h"
#include "runtime/DeviceMemory.h"
#include "runtime/MemorySize.h"

namespace npusim::runtime {

using StreamId = int64_t;  // stream id within the device; 0 = default stream

// A private memory pool, as c10's MempoolId_t: {0, 0} is the default pool;
// ids made by newMempoolId() are {0, n} for user pools (MemPool) and {n, 0}
// for pools that graph captures make for themselves, n counting up per
// process so that ids never collide.
using MempoolId = std::pair<uint64_t, uint64_t>;
constexpr MempoolId kDefaultMempool{0, 0};
MempoolId newMempoolId(bool userCreated);

// Decides, on the allocating thread, whether a request on `stream` goes to
// the pool it was registered for. Called with the allocator's lock held: it
// must not call back into the allocator.
using PoolFilter = std::function<bool(StreamId)>;

struct PoolOptions {
  bool noSplit = false;   // blocks of the pool are never split (MemPool(no_split=True))
  bool useOnOom = false;  // a request of the default pools that finds no memory may use its cached blocks
};

// Tells the allocator when work submitted on a stream has finished in
// simulated time.
class StreamUseTracker {
 public:
  virtual ~StreamUseTracker() = default;
  // A marker that completes when all work so far on `stream` completes.
  virtual uint64_t markStreamUse(StreamId stream) = 0;
  virtual bool isComplete(uint64_t marker) = 0;
  // Called before freeing cached memory on OOM / emptyCache; afterwards every
  // marker handed out so far must be complete.
  virtual void synchronizeDevice() = 0;
};

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
};

enum StatType { kAggregate = 0, kSmallPool = 1, kLargePool = 2, kStatTypeCount = 3 };

// Mirrors c10::CachingDeviceAllocator::DeviceStats field for field.
struct MemoryStats {
  std::array<Stat, 3> allocation, segment, active, inactive_split, allocated_bytes, reserved_bytes, active_bytes,
      inactive_split_bytes, requested_bytes;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0, num_device_alloc = 0, num_device_free = 0;
  Stat oversize_allocations, oversize_segments;
  int64_t max_split_size = 0;
};

struct BlockInfo {
  size_t size = 0, requested_size = 0;
  bool allocated = false, active = false;
  std::shared_ptr<StackContext> stack;  // where it was allocated, when history recorded it
};

struct SegmentInfo {
  int device = 0;
  uintptr_t address = 0;
  size_t total_size = 0, allocated_size = 0, active_size = 0, requested_size = 0;
  StreamId stream = 0;
  bool is_large = false, is_expandable = false;
  MempoolId pool = kDefaultMempool;  // segment_pool_id of CUDA's snapshot
  std::shared_ptr<StackContext> stack;  // where the segment was carved, when history recorded it
  std::vector<BlockInfo> blocks;
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlockSize = 512;             // every size is a multiple of this
  static constexpr size_t kSmallSize = size_t{1} << 20;    // largest small-pool request, 1 MiB
  static constexpr size_t kSmallBuffer = size_t{2} << 20;  // small-pool segment, 2 MiB
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // below this a large segment is carved
  static constexpr size_t kRoundLarge = size_t{2} << 20;   // large segments are multiples of 2 MiB
  static constexpr size_t kExtraLargeBuffer = size_t{1} << 30;  // segment unit with page_size:1g
  static constexpr size_t kPadBytes = 32;                  // added to every request (910B and older)
  static constexpr size_t kOneExabyte = size_t{1} << 60;

  CachingAllocator(int device, DeviceMemory& memory, StreamUseTracker& tracker, const AllocatorConfig& config);
  ~CachingAllocator();  // returns every segment to the DeviceMemory
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // 0 bytes gives nullptr. Throws OutOfMemoryError with the torch_npu text.
  void* allocate(size_t bytes, StreamId stream);
  // nullptr is ignored; an unknown pointer throws RuntimeError(kRtInvalidHandle).
  void free(void* ptr);
  // Marks `ptr` as used on `stream`: after free() it is not reused before the
  // work submitted so far on `stream` completes.
  void recordStream(void* ptr, StreamId stream);
  // Undoes recordStream(ptr, stream) (torch_npu's erase_stream): after free()
  // the block no longer waits for `stream`; the caller has ordered its reuse
  // after that stream's work by an event wait.
  void eraseStream(void* ptr, StreamId stream);
  // Size of the block holding the allocation `ptr` (the rounded size).
  size_t allocationSize(void* ptr) const;

  // --- data safety after a device fault (torch_npu's recovery) ---
  // Marks every live allocation unsafe: its data may have been lost with the
  // device's tasks. A block is safe again once it is allocated anew or fully
  // overwritten (markBlockSafe).
  void markAllBlocksUnsafe();
  // False only for a live allocation starting at `ptr` that is marked unsafe;
  // nullptr and memory this allocator did not hand out are safe.
  bool isBlockSafe(const void* ptr) const;
  void markBlockSafe(const void* ptr);

  // Gives cached unsplit segments back to the device: with the default id
  // those of the default pools and of released private pools, otherwise only
  // those of pool `pool` (a released pool with no segment left is dropped).
  void emptyCache(MempoolId pool = kDefaultMempool);
  // torch_npu's empty_virt_addr_cache (expandable segments): gives the cached
  // unsplit segments of the default pools and released private pools back as
  // emptyCache does (reserved memory drops), but keeps their physical memory
  // taken on the device until a new segment maps it again or emptyCache.
  void emptyVirtualAddressCache();

  // --- private pools (see the header comment) ---
  // Creates pool `id` with a use count of 1, or adds 1 to its use count
  // (`options` apply only when it is created). The default id throws
  // RuntimeError(kInvalidParam).
  void createOrIncrefPool(MempoolId id, PoolOptions options = {});
  // createOrIncrefPool(id), then routes requests that `filter` accepts to the
  // pool until endAllocateToPool(id). The first routing registered that
  // accepts a request wins. Throws RuntimeError(kInvalidParam) if `id` is
  // already being allocated to.
  void beginAllocateToPool(MempoolId id, PoolFilter filter);
  // Stops the routing; the use count is unchanged (pair with releasePool).
  // Unknown ids are ignored.
  void endAllocateToPool(MempoolId id);
  // Removes one use; at zero the pool is released. Unknown ids throw
  // RuntimeError(kInvalidParam).
  void releasePool(MempoolId id);
  // Use count of pool `id`, 0 when it does not exist (or was released).
  int poolUseCount(MempoolId id) const;
  // Ids of the pools that still hold segments or uses.
  std::vector<MempoolId> pools() const;
  // Replaces the settings (torch.npu.memory._set_allocator_settings, or the
  // environment read at first use); cached blocks stay, later requests follow
  // the new rounding and limits. A per_process_memory_fraction in `config`
  // is applied.
  void reconfigure(const AllocatorConfig& config);
  // fork() support (Runtime's pthread_atfork handlers): held across fork so
  // that the child never inherits the lock held by a thread it does not have.
  void lockForFork();
  void unlockAfterFork();
  // Limits reserved memory to fraction * capacity; fraction must be in [0, 1].
  void setMemoryFraction(double fraction);
  double memoryFraction() const;

  MemoryStats stats() const;
  void resetPeakStats();
  void resetAccumulatedStats();
  // With history on, taking a snapshot adds a "snapshot" trace entry.
  std::vector<SegmentInfo> snapshot() const;

  // --- allocation history (torch.npu.memory._record_memory_history) ---
  // Starts (enabled) or stops recording; either way the ring is cleared.
  // Stacks are captured by `recorder` for the events `when` names; with
  // history off the allocator captures nothing and records nothing.
  void recordHistory(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when);
  bool isHistoryEnabled() const noexcept;
  // The recorded entries, oldest first.
  std::vector<TraceEntry> trace() const;
  size_t reservedBytes() const;
  size_t allocatedBytes() const;

  int device() const noexcept { return device_; }
  // Not synchronised with reconfigure(); for tests and single-threaded use.
  const AllocatorConfig& config() const noexcept { return config_; }

  // The block size a request of `bytes` is given (padding and rounding).
  static size_t roundSize(size_t bytes, const AllocatorConfig& config);
  // The segment size carved for a rounded size, were no cached block to fit.
  static size_t segmentSizeFor(size_t roundedSize, const AllocatorConfig& config);

 private:
  // allocate / free while history is on: the stack is captured first.
  void* allocateRecorded(size_t bytes, StreamId stream);
  void freeRecorded(void* ptr);

  struct Impl;
  const int device_;
  AllocatorConfig config_;  // read by Impl under its mutex
  std::unique_ptr<Impl> impl_;
};

}  // namespace npusim::runtime

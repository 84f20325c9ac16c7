#include "runtime/CachingAllocator.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>  // std::lock_guard
#include <set>
#include <utility>
#include <vector>

#include "runtime/AddressMap.h"
#include "runtime/Error.h"
#include "runtime/SpinLock.h"

namespace npusim::runtime {

MempoolId newMempoolId(bool userCreated) {
  static std::atomic<uint64_t> next{1};
  const uint64_t n = next.fetch_add(1, std::memory_order_relaxed);
  return userCreated ? MempoolId{0, n} : MempoolId{n, 0};
}

namespace {

struct BlockPool;
struct Segment;
struct PrivatePool;

struct Block {
  StreamId stream = 0;
  size_t size = 0;
  size_t requestedSize = 0;
  BlockPool* pool = nullptr;
  Segment* segment = nullptr;
  char* ptr = nullptr;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  int eventCount = 0;     // outstanding stream-use markers
  int gcCount = 0;        // allocations since this cached block was last reused
  bool safe = true;       // false once marked unsafe (torch_npu's recovery), until reallocated or overwritten
  std::vector<StreamId> streamUses;
  std::shared_ptr<StackContext> stack;  // allocation stack while allocated (history on)

  bool isSplit() const { return prev != nullptr || next != nullptr; }
};

// Order of a pool: stream, then size, then address (best fit per stream).
struct BlockBySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};

using BlockSet = std::set<Block*, BlockBySize>;

struct BlockPool {
  explicit BlockPool(bool small, PrivatePool* privatePool = nullptr) : isSmall(small), owner(privatePool) {}
  BlockSet blocks;  // cached (free) blocks; changed only through Impl::cache/uncache
  const bool isSmall;
  PrivatePool* const owner;  // nullptr for the default pools
};

// A pool of its own (graph capture, MemPool): its segments serve only
// requests routed to it.
struct PrivatePool {
  PrivatePool(MempoolId poolId, PoolOptions poolOptions)
      : id(poolId), options(poolOptions), small(true, this), large(false, this) {}
  PrivatePool(const PrivatePool&) = delete;
  PrivatePool& operator=(const PrivatePool&) = delete;
  const MempoolId id;
  const PoolOptions options;
  int useCount = 1;
  size_t segmentCount = 0;
  BlockPool small;
  BlockPool large;
};

// One device allocation; `head` is the block at its base address.
struct Segment {
  char* base = nullptr;
  size_t size = 0;
  BlockPool* pool = nullptr;
  StreamId stream = 0;
  Block* head = nullptr;
  std::shared_ptr<StackContext> stack;  // where it was carved (history on)
};

void updateStat(Stat& stat, int64_t amount) {
  stat.current += amount;
  stat.peak = std::max(stat.current, stat.peak);
  if (amount > 0) stat.allocated += amount;
  if (amount < 0) stat.freed += -amount;
}

void resetAccumulated(Stat& stat) {
  stat.allocated = 0;
  stat.freed = 0;
}

void resetPeak(Stat& stat) { stat.peak = stat.current; }

// Applies `reset` to every Stat of `stats` (each pool's and the oversize ones).
template <typename Reset>
void forEachStat(MemoryStats& stats, Reset reset) {
  for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split, &stats.allocated_bytes,
                      &stats.reserved_bytes, &stats.active_bytes, &stats.inactive_split_bytes,
                      &stats.requested_bytes}) {
    for (Stat& stat : *array) reset(stat);
  }
  reset(stats.oversize_allocations);
  reset(stats.oversize_segments);
}

std::string poolIdText(MempoolId id) {
  return "(" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")";
}

std::string pointerText(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

size_t roundUp(size_t value, size_t unit) { return unit * ((value + unit - 1) / unit); }

// Next multiple of size's power-of-two interval divided in `divisions` parts.
size_t roundupPowerOfTwoDivision(size_t size, size_t divisions) {
  if (std::has_single_bit(size)) return size;
  size_t floor = std::bit_floor(size);
  size_t step = floor / divisions;
  if (step == 0) return floor << 1;
  size_t below = size & ~(step - 1);
  return below == size ? size : below + step;
}

}  // namespace

struct CachingAllocator::Impl {
  Impl(int deviceIndex, DeviceMemory& deviceMemory, StreamUseTracker& streamTracker, const AllocatorConfig& cfg)
      : device(deviceIndex), memory(deviceMemory), tracker(streamTracker), config(cfg), small(true), large(false) {
    stats.max_split_size =
        config.maxSplitSize == AllocatorConfig::kUnlimited ? -1 : static_cast<int64_t>(config.maxSplitSize);
    spareNodes.reserve(kSpareNodes);
  }

  ~Impl() {
    releaseRetainedPhysical();
    for (auto& [base, segment] : segments) {
      memory.free(segment->base, segment->size);
      Block* block = segment->head;
      while (block != nullptr) {
        Block* next = block->next;
        delete block;
        block = next;
      }
      delete segment;
    }
    for (Block* block : spareBlocks) delete block;
  }

  struct Request {
    // History on: the request's allocation stack (itself null when no stack is
    // kept); nullptr when history is off, so that an unrecorded request holds
    // nothing to construct or destroy.
    const std::shared_ptr<StackContext>* recorded = nullptr;
    StreamId stream = 0;
    size_t size = 0;       // rounded block size
    size_t segmentSize = 0;
    BlockPool* pool = nullptr;
    Block* block = nullptr;
    // A block findCachedBlock found is still in its pool, at `cachedAt`,
    // until useBlock takes it out (or keeps it there as the split remainder).
    bool inPool = false;
    BlockSet::iterator cachedAt{};
    std::string hostRefusal;  // why the host refused the last segment, if it did
  };

  const int device;
  DeviceMemory& memory;
  StreamUseTracker& tracker;
  const AllocatorConfig& config;

  mutable SpinLock mutex;  // every critical section is short but the OOM retry (see SpinLock.h)
  MemoryStats stats;
  BlockPool small;
  BlockPool large;
  std::vector<std::pair<char*, size_t>> retainedPhysical;  // see releaseRetainedPhysical
  bool keepPhysicalOnRelease = false;
  AddressMap<Block> allocated;                                             // live allocations by address
  std::map<uintptr_t, Segment*> segments;                                  // by base address
  std::map<StreamId, std::deque<std::pair<uint64_t, Block*>>> pendingUses;  // freed, awaiting streams
  size_t pendingUseCount = 0;
  size_t totalReserved = 0;
  bool fractionSet = false;
  double fraction = 1.0;
  size_t allowedMaximum = 0;
  std::vector<Block*> spareBlocks;
  static constexpr size_t kSpareNodes = 64;
  std::vector<BlockSet::node_type> spareNodes;
  std::map<MempoolId, std::unique_ptr<PrivatePool>> privatePools;
  std::vector<std::pair<MempoolId, PoolFilter>> poolRoutes;  // begun, not yet ended
  size_t releasedPools = 0;  // use count 0, still in privatePools
  mutable AllocationHistory history;  // snapshot() records into it too

  static MempoolId poolIdOf(const BlockPool& pool) {
    return pool.owner != nullptr ? pool.owner->id : kDefaultMempool;
  }

  // For events that happen later than the call that caused them (a stream's
  // work completing): recorded without a stack of their own.
  const std::shared_ptr<StackContext>* recordedOrNull() const {
    static const std::shared_ptr<StackContext> kNoStack;
    return history.recording() ? &kNoStack : nullptr;
  }

  void recordTrace(TraceAction action, uintptr_t addr, size_t size, StreamId stream, MempoolId pool,
                   std::shared_ptr<StackContext> stack) const {
    TraceEntry entry;
    entry.action = action;
    entry.device = device;
    entry.addr = addr;
    entry.size = size;
    entry.stream = stream;
    entry.pool = pool;
    entry.stack = std::move(stack);
    history.record(std::move(entry));
  }

  // --- private pools ---
  PrivatePool* findPool(MempoolId id) const {
    auto it = privatePools.find(id);
    return it == privatePools.end() ? nullptr : it->second.get();
  }

  bool isRouted(MempoolId id) const {
    return std::any_of(poolRoutes.begin(), poolRoutes.end(), [&](const auto& route) { return route.first == id; });
  }

  BlockPool* poolFor(size_t size, StreamId stream) {
    const bool isSmall = size <= kSmallSize;
    for (const auto& [id, filter] : poolRoutes) {
      if (!filter || filter(stream)) {
        PrivatePool& pool = *privatePools.at(id);
        return isSmall ? &pool.small : &pool.large;
      }
    }
    return isSmall ? &small : &large;
  }

  void createOrIncrefPool(MempoolId id, PoolOptions options) {
    if (id == kDefaultMempool) {
      throw RuntimeError(ErrorCode::kInvalidParam, "createOrIncrefPool",
                         "memory pool id (0, 0) is the default pool and cannot be a private pool");
    }
    PrivatePool* pool = findPool(id);
    if (pool == nullptr) {
      privatePools.emplace(id, std::make_unique<PrivatePool>(id, options));
      return;
    }
    if (pool->useCount == 0) releasedPools -= 1;  // revived before its last segment went
    pool->useCount += 1;
  }

  void releasePool(MempoolId id) {
    PrivatePool* pool = findPool(id);
    if (pool == nullptr || pool->useCount == 0) {
      throw RuntimeError(ErrorCode::kInvalidParam, "releasePool",
                         "no memory pool with id " + poolIdText(id) + " on NPU " + std::to_string(device));
    }
    if (--pool->useCount > 0) return;
    releasedPools += 1;
    releaseUnsplitBlocks(pool->large);
    releaseUnsplitBlocks(pool->small);
    dropReleasedPools();
  }

  // Forgets released pools that hold no segment and are not routed to.
  void dropReleasedPools() {
    if (releasedPools == 0) return;
    for (auto it = privatePools.begin(); it != privatePools.end();) {
      PrivatePool& pool = *it->second;
      if (pool.useCount == 0 && pool.segmentCount == 0 && !isRouted(pool.id)) {
        it = privatePools.erase(it);
        releasedPools -= 1;
      } else {
        ++it;
      }
    }
  }

  // MemPool(use_on_oom=True): a request of the default pools that found no
  // memory takes a cached block of such a pool.
  bool findCachedBlockInOomPools(Request& request) {
    if (request.pool->owner != nullptr) return false;
    for (auto& [id, pool] : privatePools) {
      if (!pool->options.useOnOom || pool->useCount == 0) continue;
      Request attempt = request;
      attempt.pool = request.pool->isSmall ? &pool->small : &pool->large;
      if (findCachedBlock(attempt)) {
        request = std::move(attempt);
        return true;
      }
    }
    return false;
  }

  // --- statistics helpers ---
  template <typename Function>
  static void forPool(const BlockPool& pool, Function&& function) {
    function(static_cast<size_t>(kAggregate));
    function(static_cast<size_t>(pool.isSmall ? kSmallPool : kLargePool));
  }

  bool isOversize(size_t size) const { return size >= config.maxSplitSize; }

  // --- block objects are recycled to keep the hot path off the heap ---
  Block* newBlock(StreamId stream, size_t size, BlockPool* pool, Segment* segment, char* ptr) {
    Block* block;
    if (!spareBlocks.empty()) {
      block = spareBlocks.back();
      spareBlocks.pop_back();
    } else {
      block = new Block();
    }
    block->stream = stream;
    block->size = size;
    block->requestedSize = 0;
    block->pool = pool;
    block->segment = segment;
    block->ptr = ptr;
    block->allocated = false;
    block->prev = nullptr;
    block->next = nullptr;
    block->eventCount = 0;
    block->gcCount = 0;
    block->streamUses.clear();
    return block;
  }

  void recycle(Block* block) {
    if (block->stack) block->stack.reset();
    if (spareBlocks.size() < 4096) {
      spareBlocks.push_back(block);
    } else {
      delete block;
    }
  }

  // --- the pools' tree nodes are recycled too ---
  // A small allocation and its free each take a block out of a pool and put
  // one back (the split remainder, the merged block): with std::set's own
  // insert and erase that is a heap node allocated and freed every time.
  // Extracted nodes are kept and reused for the next insert, into any pool:
  // the same set contents in the same order, without the heap.
  void keepNode(BlockSet::node_type node) {
    if (!node.empty() && spareNodes.size() < kSpareNodes) spareNodes.push_back(std::move(node));
  }
  void uncache(BlockPool& pool, BlockSet::iterator it) { keepNode(pool.blocks.extract(it)); }
  void uncache(BlockPool& pool, Block* block) { keepNode(pool.blocks.extract(block)); }
  void cache(BlockPool& pool, Block* block) {
    if (spareNodes.empty()) {
      pool.blocks.insert(block);
      return;
    }
    BlockSet::node_type node = std::move(spareNodes.back());
    spareNodes.pop_back();
    node.value() = block;
    pool.blocks.insert(std::move(node));
  }

  // --- the allocation path ---
  void* allocate(size_t bytes, StreamId stream, const std::shared_ptr<StackContext>* recorded) {
    processStreamUses();
    Request request;
    request.recorded = recorded;
    request.stream = stream;
    request.size = roundSize(bytes, config);
    request.pool = poolRoutes.empty() ? (request.size <= kSmallSize ? &small : &large) : poolFor(request.size, stream);
    request.segmentSize = config.cachingDisabled ? request.size : segmentSizeFor(request.size, config);

    bool found = !config.cachingDisabled && findCachedBlock(request);
    if (!found) {
      if (fractionSet && config.garbageCollectionThreshold > 0.0) collectGarbage();
      found = carveSegment(request, false) || (releaseOversizeBlocks(request) && carveSegment(request, false));
    }
    if (!found) {
      // Synchronize, give every unsplit cached block back and retry once.
      tracker.synchronizeDevice();
      releaseCachedBlocks();
      found = carveSegment(request, true);
    }
    if (!found) found = findCachedBlockInOomPools(request);
    // The chip has room but the host cannot back the segment in full: grant it as the chip
    // would, its pages committed as they are written (DeviceMemory::allocateUncommitted).
    if (!found && !request.hostRefusal.empty()) found = carveSegmentUncommitted(request);
    if (!found) throwOutOfMemory(request);

    const bool split = !config.cachingDisabled && shouldSplit(request.block, request.size);
    if (request.inPool && !split) {
      uncache(*request.pool, request.cachedAt);
      request.inPool = false;
    }
    return useBlock(request, bytes, split);
  }

  bool findCachedBlock(Request& request) {
    BlockPool& pool = *request.pool;
    if (fractionSet && config.garbageCollectionThreshold > 0.0) {
      for (Block* block : pool.blocks) ++block->gcCount;
    }
    Block key;
    key.stream = request.stream;
    key.size = request.size;
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != request.stream) return false;
    Block* candidate = *it;
    // Oversize blocks serve only oversize requests, and only those within
    // max_non_split_rounding of their size.
    if (!isOversize(request.size) && isOversize(candidate->size)) return false;
    if (isOversize(request.size) && candidate->size >= request.size + config.maxNonSplitRoundingSize) return false;
    candidate->gcCount = 0;
    // Left in the pool for now: split, it stays there as the remainder (useBlock).
    request.inPool = true;
    request.cachedAt = it;
    request.block = candidate;
    return true;
  }

  bool shouldSplit(const Block* block, size_t size) const {
    if (block->pool->owner != nullptr && block->pool->owner->options.noSplit) return false;
    size_t remaining = block->size - size;
    if (block->pool->isSmall) return remaining >= kMinBlockSize;
    return size < config.maxSplitSize && remaining > kSmallSize;
  }

  // Gets a new segment from the device memory.
  bool carveSegment(Request& request, bool isRetry) {
    if (isRetry) stats.num_alloc_retries += 1;
    request.hostRefusal.clear();
    releaseRetainedPhysical();  // the kept physical memory is mapped again for the new segment
    if (!withinFraction(request.segmentSize)) return false;
    return adoptSegment(request, memory.allocate(request.segmentSize, &request.hostRefusal));
  }

  bool carveSegmentUncommitted(Request& request) {
    request.hostRefusal.clear();
    releaseRetainedPhysical();
    if (!withinFraction(request.segmentSize)) return false;
    return adoptSegment(request, memory.allocateUncommitted(request.segmentSize, &request.hostRefusal));
  }

  bool withinFraction(size_t size) const {
    return !fractionSet || (size <= allowedMaximum && totalReserved <= allowedMaximum - size);
  }

  // Makes the new mapping `ptr` (nullptr: none) a segment of the request's pool.
  bool adoptSegment(Request& request, void* ptr) {
    const size_t size = request.segmentSize;
    if (ptr == nullptr) return false;
    stats.num_device_alloc += 1;
    totalReserved += size;
    if (request.pool->owner != nullptr) request.pool->owner->segmentCount += 1;

    Segment* segment = new Segment();
    segment->base = static_cast<char*>(ptr);
    segment->size = size;
    segment->pool = request.pool;
    segment->stream = request.stream;
    Block* block = newBlock(request.stream, size, request.pool, segment, segment->base);
    segment->head = block;
    segments.emplace(reinterpret_cast<uintptr_t>(ptr), segment);
    if (request.recorded != nullptr) {
      segment->stack = *request.recorded;
      recordTrace(TraceAction::kSegmentAlloc, reinterpret_cast<uintptr_t>(ptr), size, request.stream,
                  poolIdOf(*request.pool), *request.recorded);
    }

    forPool(*request.pool, [&](size_t type) {
      updateStat(stats.segment[type], 1);
      updateStat(stats.reserved_bytes[type], static_cast<int64_t>(size));
    });
    if (isOversize(size)) updateStat(stats.oversize_segments, 1);
    request.block = block;
    return true;
  }

  void* useBlock(Request& request, size_t requestedBytes, bool split) {
    Block* block = request.block;
    BlockPool& pool = *request.pool;
    const bool alreadySplit = block->isSplit();
    if (split) {
      Block* remaining = block;
      block = newBlock(request.stream, request.size, &pool, remaining->segment, remaining->ptr);
      block->prev = remaining->prev;
      if (block->prev != nullptr) block->prev->next = block;
      block->next = remaining;
      remaining->prev = block;
      remaining->ptr += request.size;
      remaining->size -= request.size;
      if (block->prev == nullptr) block->segment->head = block;
      if (request.inPool) {
        // The remainder is the cached block, smaller: it keeps its node where it still sorts
        // after its predecessor (its successor sorts after it anyway), else it moves.
        request.inPool = false;
        if (!inOrder(pool, request.cachedAt)) {
          keepNode(pool.blocks.extract(request.cachedAt));  // by position: no comparison
          cache(pool, remaining);
        }
      } else {
        cache(pool, remaining);
      }
      if (alreadySplit) {
        // An inactive split block shrinks by the part handed out.
        forPool(pool, [&](size_t type) {
          updateStat(stats.inactive_split_bytes[type], -static_cast<int64_t>(block->size));
        });
      } else {
        // A whole block becomes split: its remainder is a new inactive split block.
        forPool(pool, [&](size_t type) {
          updateStat(stats.inactive_split_bytes[type], static_cast<int64_t>(remaining->size));
          updateStat(stats.inactive_split[type], 1);
        });
      }
    } else if (alreadySplit) {
      forPool(pool, [&](size_t type) {
        updateStat(stats.inactive_split_bytes[type], -static_cast<int64_t>(block->size));
        updateStat(stats.inactive_split[type], -1);
      });
    }

    block->allocated = true;
    block->safe = true;  // fresh data: whatever the block held before is gone
    block->requestedSize = requestedBytes;
    if (request.recorded != nullptr) {
      block->stack = *request.recorded;
      recordTrace(TraceAction::kAlloc, reinterpret_cast<uintptr_t>(block->ptr), requestedBytes, block->stream,
                  poolIdOf(pool), *request.recorded);
    }
    allocated.insert(block->ptr, block);
    forPool(pool, [&](size_t type) {
      updateStat(stats.allocation[type], 1);
      updateStat(stats.allocated_bytes[type], static_cast<int64_t>(block->size));
      updateStat(stats.active[type], 1);
      updateStat(stats.active_bytes[type], static_cast<int64_t>(block->size));
      updateStat(stats.requested_bytes[type], static_cast<int64_t>(block->requestedSize));
    });
    if (isOversize(block->size)) updateStat(stats.oversize_allocations, 1);
    return block->ptr;
  }

  [[noreturn]] void throwOutOfMemory(const Request& request) {
    const size_t segmentSize = request.segmentSize;
    stats.num_ooms += 1;
    // torch's "oom" entry: addr holds the bytes the device still has free.
    if (request.recorded != nullptr) {
      recordTrace(TraceAction::kOom, memory.freeBytes(), request.size, request.stream, poolIdOf(*request.pool),
                  *request.recorded);
    }
    std::string allowed;
    if (fractionSet) allowed = formatMemorySize(allowedMaximum) + " allowed; ";
    std::string message = "NPU out of memory. Tried to allocate " + formatMemorySize(segmentSize) + " (NPU " +
                          std::to_string(device) + "; " + formatMemorySize(memory.capacity()) +
                          " total capacity; " +
                          formatMemorySize(static_cast<uint64_t>(stats.allocated_bytes[kAggregate].current)) +
                          " already allocated; " +
                          formatMemorySize(static_cast<uint64_t>(stats.active_bytes[kAggregate].current)) +
                          " current active; " + formatMemorySize(memory.freeBytes()) + " free; " + allowed +
                          formatMemorySize(static_cast<uint64_t>(stats.reserved_bytes[kAggregate].current)) +
                          " reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
                          "max_split_size_mb to avoid fragmentation.";
    // The chip had room but the host did not: say so, with both limits.
    if (!request.hostRefusal.empty()) message += " The " + request.hostRefusal;
    throw OutOfMemoryError(device, std::move(message));
  }

  // --- the free path ---
  [[noreturn]] void throwInvalidPointer(void* ptr, const char* call) const {
    throw RuntimeError(ErrorCode::kRtInvalidHandle, call,
                       "invalid device pointer: " + pointerText(ptr) + " is not an allocation of NPU " +
                           std::to_string(device));
  }

  Block* findAllocated(void* ptr, const char* call) const {
    Block* block = allocated.find(ptr);
    if (block == nullptr) throwInvalidPointer(ptr, call);
    return block;
  }

  void markAllocatedBlocksUnsafe() {
    for (const auto& [base, segment] : segments) {
      for (Block* block = segment->head; block != nullptr; block = block->next) {
        if (block->allocated) block->safe = false;
      }
    }
  }

  // `recorded`: as Request::recorded, the free's own stack.
  void free(void* ptr, const std::shared_ptr<StackContext>* recorded) {
    Block* block = allocated.erase(ptr);
    if (block == nullptr) throwInvalidPointer(ptr, "NPUCachingAllocator free");
    block->allocated = false;
    if (recorded != nullptr) {
      recordTrace(TraceAction::kFreeRequested, reinterpret_cast<uintptr_t>(block->ptr), block->requestedSize,
                  block->stream, poolIdOf(*block->pool), *recorded ? *recorded : block->stack);
    }
    forPool(*block->pool, [&](size_t type) {
      updateStat(stats.allocation[type], -1);
      updateStat(stats.allocated_bytes[type], -static_cast<int64_t>(block->size));
    });
    if (isOversize(block->size)) updateStat(stats.oversize_allocations, -1);
    if (!block->streamUses.empty()) {
      for (StreamId stream : block->streamUses) {
        uint64_t marker = tracker.markStreamUse(stream);
        pendingUses[stream].emplace_back(marker, block);
        block->eventCount += 1;
        pendingUseCount += 1;
      }
      block->streamUses.clear();
    } else {
      cacheBlock(block, recorded);
    }
  }

  // Puts a block that is no longer in use back into its pool.
  // `recorded`: nullptr with history off, else the stack of the free (may be null).
  void cacheBlock(Block* block, const std::shared_ptr<StackContext>* recorded) {
    if (recorded != nullptr) {
      recordTrace(TraceAction::kFreeCompleted, reinterpret_cast<uintptr_t>(block->ptr), block->requestedSize,
                  block->stream, poolIdOf(*block->pool), *recorded ? *recorded : block->stack);
    }
    if (block->stack) block->stack.reset();
    const size_t originalSize = block->size;
    const size_t requestedSize = block->requestedSize;
    BlockPool& pool = *block->pool;
    int64_t inactiveSplitBlocks = 0;
    int64_t inactiveSplitBytes = 0;
    // The last neighbour merged leaves its node in the pool, and the merged
    // block takes that node where it sorts there too (a block freed next to
    // a cached remainder, the common case): one lookup instead of an erase
    // and an insert, the same set of blocks.
    Block* const prev = block->prev;
    Block* const next = block->next;
    Block* const kept = mergeable(next) ? next : mergeable(prev) ? prev : nullptr;
    const BlockSet::iterator keptAt = kept != nullptr ? pool.blocks.find(kept) : pool.blocks.end();
    for (Block* neighbour : {prev, next}) {
      if (!mergeable(neighbour)) continue;
      const size_t merged = mergeInto(block, neighbour, pool, /*inPool=*/neighbour != kept);
      inactiveSplitBlocks -= 1;
      inactiveSplitBytes -= static_cast<int64_t>(merged);
    }
    if (kept != nullptr) {
      const_cast<Block*&>(*keptAt) = block;  // the node's own storage (not const), keyed by `block` now
      if (!inOrder(pool, keptAt)) {
        keepNode(pool.blocks.extract(keptAt));  // by position: no comparison
        cache(pool, block);
      }
      recycle(kept);
    } else {
      cache(pool, block);
    }
    if (block->isSplit()) {
      inactiveSplitBlocks += 1;
      inactiveSplitBytes += static_cast<int64_t>(block->size);
    }
    forPool(pool, [&](size_t type) {
      updateStat(stats.inactive_split[type], inactiveSplitBlocks);
      updateStat(stats.inactive_split_bytes[type], inactiveSplitBytes);
      updateStat(stats.active[type], -1);
      updateStat(stats.active_bytes[type], -static_cast<int64_t>(originalSize));
      updateStat(stats.requested_bytes[type], -static_cast<int64_t>(requestedSize));
    });
    // A released private pool gives each segment back once it is free.
    const bool poolReleased = pool.owner != nullptr && pool.owner->useCount == 0;
    if ((config.cachingDisabled || poolReleased) && !block->isSplit()) releaseSegment(block);
  }

  // A free neighbour that a freed block absorbs (cached, in its pool).
  static bool mergeable(const Block* neighbour) {
    return neighbour != nullptr && !neighbour->allocated && neighbour->eventCount == 0 &&
           neighbour->streamUses.empty();
  }

  // Whether the block at `it` sorts between its neighbours in the pool.
  static bool inOrder(const BlockPool& pool, BlockSet::iterator it) {
    const BlockBySize before;
    if (it != pool.blocks.begin() && !before(*std::prev(it), *it)) return false;
    const auto after = std::next(it);
    return after == pool.blocks.end() || before(*it, *after);
  }

  // Merges the mergeable neighbour `source` into `target`; returns the bytes
  // gained. `inPool`: take `source` out of the pool and recycle it (else the
  // caller does both).
  size_t mergeInto(Block* target, Block* source, BlockPool& pool, bool inPool) {
    if (inPool) uncache(pool, source);
    if (target->prev == source) {
      target->ptr = source->ptr;
      target->prev = source->prev;
      if (target->prev != nullptr) {
        target->prev->next = target;
      } else {
        target->segment->head = target;
      }
    } else {
      target->next = source->next;
      if (target->next != nullptr) target->next->prev = target;
    }
    const size_t gained = source->size;
    target->size += gained;
    if (inPool) recycle(source);
    return gained;
  }

  void processStreamUses() {
    if (pendingUseCount == 0) return;
    for (auto& [stream, queue] : pendingUses) {
      while (!queue.empty() && tracker.isComplete(queue.front().first)) {
        Block* block = queue.front().second;
        queue.pop_front();
        pendingUseCount -= 1;
        if (--block->eventCount == 0) cacheBlock(block, recordedOrNull());
      }
    }
  }

  // After tracker.synchronizeDevice(): every stream use is over.
  void completeAllStreamUses() {
    stats.num_sync_all_streams += 1;
    for (auto& [stream, queue] : pendingUses) {
      for (auto& [marker, block] : queue) {
        if (--block->eventCount == 0) cacheBlock(block, recordedOrNull());
      }
      queue.clear();
    }
    pendingUses.clear();
    pendingUseCount = 0;
  }

  // --- giving memory back to the device ---
  // `block` is a cached block that covers its whole segment.
  void releaseSegment(Block* block) {
    Segment* segment = block->segment;
    BlockPool& pool = *block->pool;
    uncache(pool, block);
    if (history.recording()) {  // off the cached path: a device free follows
      recordTrace(TraceAction::kSegmentFree, reinterpret_cast<uintptr_t>(segment->base), segment->size,
                  segment->stream, poolIdOf(pool), segment->stack);
    }
    if (keepPhysicalOnRelease) {
      retainedPhysical.emplace_back(segment->base, segment->size);
    } else {
      memory.free(segment->base, segment->size);
    }
    stats.num_device_free += 1;
    totalReserved -= segment->size;
    forPool(pool, [&](size_t type) {
      updateStat(stats.segment[type], -1);
      updateStat(stats.reserved_bytes[type], -static_cast<int64_t>(segment->size));
    });
    if (isOversize(segment->size)) updateStat(stats.oversize_segments, -1);
    if (pool.owner != nullptr) pool.owner->segmentCount -= 1;
    segments.erase(reinterpret_cast<uintptr_t>(segment->base));
    delete segment;
    recycle(block);
  }

  // Physical memory that emptyVirtualAddressCache unmapped but kept: it stays
  // taken on the device until the next segment maps it again or emptyCache.
  void releaseRetainedPhysical() {
    for (const auto& [base, size] : retainedPhysical) memory.free(base, size);
    retainedPhysical.clear();
  }

  void releaseUnsplitBlocks(BlockPool& pool) {
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      Block* block = *it;
      ++it;
      if (!block->isSplit()) releaseSegment(block);
    }
  }

  // Requires tracker.synchronizeDevice() first. Pools still in use keep
  // their segments.
  void releaseCachedBlocks() {
    completeAllStreamUses();
    releaseUnsplitBlocks(large);
    releaseUnsplitBlocks(small);
    for (auto& [id, pool] : privatePools) {
      if (pool->useCount > 0) continue;
      releaseUnsplitBlocks(pool->large);
      releaseUnsplitBlocks(pool->small);
    }
    dropReleasedPools();
  }

  // Requires tracker.synchronizeDevice() first.
  void releaseCachedBlocksOf(MempoolId id) {
    completeAllStreamUses();
    PrivatePool* pool = findPool(id);
    if (pool == nullptr) return;
    releaseUnsplitBlocks(pool->large);
    releaseUnsplitBlocks(pool->small);
    dropReleasedPools();
  }

  // With max_split_size set: frees cached oversize segments of the request's
  // stream, the smallest one that covers the request, or else the largest
  // ones until their total covers it.
  bool releaseOversizeBlocks(const Request& request) {
    if (config.maxSplitSize == AllocatorConfig::kUnlimited) return false;
    BlockPool& pool = *request.pool;
    const size_t target = std::max(request.size, config.maxSplitSize);
    tracker.synchronizeDevice();
    Block key;
    key.stream = request.stream;
    key.size = target;
    auto it = pool.blocks.lower_bound(&key);
    for (auto candidate = it; candidate != pool.blocks.end() && (*candidate)->stream == request.stream;
         ++candidate) {
      if (!(*candidate)->isSplit()) {
        releaseSegment(*candidate);
        return true;
      }
    }
    std::vector<Block*> largestFirst;
    while (it != pool.blocks.begin()) {
      --it;
      Block* block = *it;
      if (block->stream != request.stream || !isOversize(block->size)) break;
      if (!block->isSplit()) largestFirst.push_back(block);
    }
    size_t released = 0;
    for (Block* block : largestFirst) {
      if (released >= target) break;
      released += block->size;
      releaseSegment(block);
    }
    return released >= target;
  }

  // garbage_collection_threshold: once reserved memory passes the threshold
  // of the allowed memory, free unsplit large cached segments, those unused
  // for longer than average first, until back under it.
  void collectGarbage() {
    const size_t threshold = static_cast<size_t>(config.garbageCollectionThreshold * static_cast<double>(allowedMaximum));
    if (totalReserved <= threshold) return;
    const size_t target = totalReserved - threshold;
    double totalAge = 0.0;
    int freeable = 0;
    for (Block* block : large.blocks) {
      if (!block->isSplit()) {
        totalAge += block->gcCount;
        ++freeable;
      }
    }
    if (freeable == 0) return;
    tracker.synchronizeDevice();
    size_t reclaimed = 0;
    bool freedOne = true;
    while (reclaimed < target && freedOne && freeable > 0) {
      const double ageThreshold = totalAge / freeable;
      freedOne = false;
      for (auto it = large.blocks.begin(); it != large.blocks.end();) {
        Block* block = *it;
        ++it;
        if (!block->isSplit() && block->gcCount >= ageThreshold) {
          freedOne = true;
          reclaimed += block->size;
          totalAge -= block->gcCount;
          --freeable;
          releaseSegment(block);
        }
      }
    }
  }

  // --- inspection ---
  std::vector<SegmentInfo> snapshot() const {
    std::vector<SegmentInfo> result;
    result.reserve(segments.size());
    for (const auto& [base, segment] : segments) {
      SegmentInfo info;
      info.device = device;
      info.address = base;
      info.stream = segment->stream;
      info.is_large = !segment->pool->isSmall;
      info.is_expandable = false;
      if (segment->pool->owner != nullptr) info.pool = segment->pool->owner->id;
      info.stack = segment->stack;
      for (const Block* block = segment->head; block != nullptr; block = block->next) {
        BlockInfo blockInfo;
        blockInfo.size = block->size;
        blockInfo.requested_size = block->requestedSize;
        blockInfo.allocated = block->allocated;
        blockInfo.active = block->allocated || block->eventCount > 0;
        if (block->allocated) blockInfo.stack = block->stack;
        info.total_size += blockInfo.size;
        if (blockInfo.allocated) info.allocated_size += blockInfo.size;
        if (blockInfo.active) {
          info.active_size += blockInfo.size;
          info.requested_size += blockInfo.requested_size;
        }
        info.blocks.push_back(blockInfo);
      }
      result.push_back(std::move(info));
    }
    if (history.recording()) {
      size_t totalActive = 0;
      for (const SegmentInfo& info : result) totalActive += info.active_size;
      recordTrace(TraceAction::kSnapshot, 0, totalActive, 0, kDefaultMempool, nullptr);
    }
    return result;
  }
};

size_t CachingAllocator::roundSize(size_t bytes, const AllocatorConfig& config) {
  size_t size = bytes + kPadBytes;
  if (size < kMinBlockSize) return kMinBlockSize;
  size_t divisions = config.roundupDivisionsFor(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) return roundupPowerOfTwoDivision(size, divisions);
  return roundUp(size, kMinBlockSize);
}

size_t CachingAllocator::segmentSizeFor(size_t roundedSize, const AllocatorConfig& config) {
  if (roundedSize <= kSmallSize) return kSmallBuffer;
  if (config.pageSize1g) return roundUp(roundedSize, kExtraLargeBuffer);
  if (roundedSize < kMinLargeAlloc) return config.largeSegmentSize;
  return roundUp(roundedSize, kRoundLarge);
}

CachingAllocator::CachingAllocator(int device, DeviceMemory& memory, StreamUseTracker& tracker,
                                   const AllocatorConfig& config)
    : device_(device), config_(config), impl_(std::make_unique<Impl>(device, memory, tracker, config_)) {
  if (config_.perProcessMemoryFraction) setMemoryFraction(*config_.perProcessMemoryFraction);
}

CachingAllocator::~CachingAllocator() = default;

void* CachingAllocator::allocate(size_t bytes, StreamId stream) {
  if (bytes == 0) return nullptr;
  if (bytes >= kOneExabyte) {
    throw OutOfMemoryError(device_, "NPU out of memory. Tried to allocate more than 1EB memory.");
  }
  // History off: this one relaxed load is all it costs.
  if (impl_->history.recording()) return allocateRecorded(bytes, stream);
  std::lock_guard<SpinLock> lock(impl_->mutex);
  void* ptr = impl_->allocate(bytes, stream, nullptr);
  impl_->dropReleasedPools();
  return ptr;
}

// The stack is captured before the lock: capturing a Python stack takes the
// GIL, and a thread holding the GIL may be waiting for this allocator.
void* CachingAllocator::allocateRecorded(size_t bytes, StreamId stream) {
  const std::shared_ptr<StackContext> stack = impl_->history.captureStack(RecordContext::kState);
  std::lock_guard<SpinLock> lock(impl_->mutex);
  void* ptr = impl_->allocate(bytes, stream, &stack);
  impl_->dropReleasedPools();
  return ptr;
}

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  if (impl_->history.recording()) return freeRecorded(ptr);
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->free(ptr, nullptr);
  impl_->dropReleasedPools();
}

void CachingAllocator::freeRecorded(void* ptr) {
  const std::shared_ptr<StackContext> stack = impl_->history.captureStack(RecordContext::kAll);
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->free(ptr, &stack);
  impl_->dropReleasedPools();
}

void CachingAllocator::recordStream(void* ptr, StreamId stream) {
  if (ptr == nullptr) return;
  std::lock_guard<SpinLock> lock(impl_->mutex);
  Block* block = impl_->findAllocated(ptr, "NPUCachingAllocator recordStream");
  // Uses on the allocation stream are ordered by the stream itself.
  if (stream == block->stream) return;
  if (std::find(block->streamUses.begin(), block->streamUses.end(), stream) == block->streamUses.end()) {
    block->streamUses.push_back(stream);
  }
}

void CachingAllocator::eraseStream(void* ptr, StreamId stream) {
  if (ptr == nullptr) return;
  std::lock_guard<SpinLock> lock(impl_->mutex);
  Block* block = impl_->findAllocated(ptr, "NPUCachingAllocator eraseStream");
  auto& uses = block->streamUses;
  uses.erase(std::remove(uses.begin(), uses.end(), stream), uses.end());
}

size_t CachingAllocator::allocationSize(void* ptr) const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return impl_->findAllocated(ptr, "NPUCachingAllocator allocationSize")->size;
}

bool CachingAllocator::isBlockSafe(const void* ptr) const {
  if (ptr == nullptr) return true;
  std::lock_guard<SpinLock> lock(impl_->mutex);
  const Block* block = impl_->allocated.find(ptr);
  return block == nullptr || block->safe;
}

void CachingAllocator::markBlockSafe(const void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<SpinLock> lock(impl_->mutex);
  if (Block* block = impl_->allocated.find(ptr)) block->safe = true;
}

void CachingAllocator::markAllBlocksUnsafe() {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->markAllocatedBlocksUnsafe();
}

void CachingAllocator::emptyVirtualAddressCache() {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->tracker.synchronizeDevice();
  impl_->keepPhysicalOnRelease = true;
  impl_->releaseCachedBlocks();
  impl_->keepPhysicalOnRelease = false;
}

void CachingAllocator::emptyCache(MempoolId pool) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->tracker.synchronizeDevice();
  if (pool == kDefaultMempool) {
    impl_->releaseRetainedPhysical();
    impl_->releaseCachedBlocks();
  } else {
    impl_->releaseCachedBlocksOf(pool);
  }
}

void CachingAllocator::createOrIncrefPool(MempoolId id, PoolOptions options) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->createOrIncrefPool(id, options);
}

void CachingAllocator::beginAllocateToPool(MempoolId id, PoolFilter filter) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  if (impl_->isRouted(id)) {
    throw RuntimeError(ErrorCode::kInvalidParam, "beginAllocateToPool",
                       "already allocating to memory pool " + poolIdText(id) + " on NPU " + std::to_string(device_));
  }
  impl_->createOrIncrefPool(id, PoolOptions{});
  impl_->poolRoutes.emplace_back(id, std::move(filter));
}

void CachingAllocator::endAllocateToPool(MempoolId id) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  auto& routes = impl_->poolRoutes;
  routes.erase(std::remove_if(routes.begin(), routes.end(), [&](const auto& route) { return route.first == id; }),
               routes.end());
  impl_->dropReleasedPools();
}

void CachingAllocator::releasePool(MempoolId id) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->releasePool(id);
}

int CachingAllocator::poolUseCount(MempoolId id) const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  const PrivatePool* pool = impl_->findPool(id);
  return pool == nullptr ? 0 : pool->useCount;
}

std::vector<MempoolId> CachingAllocator::pools() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  std::vector<MempoolId> ids;
  for (const auto& [id, pool] : impl_->privatePools) ids.push_back(id);
  return ids;
}

void CachingAllocator::reconfigure(const AllocatorConfig& config) {
  {
    std::lock_guard<SpinLock> lock(impl_->mutex);
    config_ = config;
    impl_->stats.max_split_size =
        config_.maxSplitSize == AllocatorConfig::kUnlimited ? -1 : static_cast<int64_t>(config_.maxSplitSize);
  }
  if (config.perProcessMemoryFraction) setMemoryFraction(*config.perProcessMemoryFraction);
}

void CachingAllocator::setMemoryFraction(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    throw RuntimeError(ErrorCode::kInvalidParam, "setMemoryFraction",
                       "Invalid fraction value: " + std::to_string(fraction) + ". Allowed range: 0~1");
  }
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->fraction = fraction;
  impl_->allowedMaximum = static_cast<size_t>(fraction * static_cast<double>(impl_->memory.capacity()));
  impl_->fractionSet = true;
}

double CachingAllocator::memoryFraction() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return impl_->fraction;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return impl_->stats;
}

void CachingAllocator::resetPeakStats() {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  forEachStat(impl_->stats, resetPeak);
}

void CachingAllocator::resetAccumulatedStats() {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  MemoryStats& stats = impl_->stats;
  forEachStat(stats, resetAccumulated);
  stats.num_alloc_retries = 0;
  stats.num_ooms = 0;
  stats.num_sync_all_streams = 0;
  stats.num_device_alloc = 0;
  stats.num_device_free = 0;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return impl_->snapshot();
}

void CachingAllocator::recordHistory(bool enabled, StackRecorder recorder, size_t maxEntries, RecordContext when) {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  impl_->history.configure(enabled, std::move(recorder), maxEntries, when);
}

bool CachingAllocator::isHistoryEnabled() const noexcept { return impl_->history.recording(); }

std::vector<TraceEntry> CachingAllocator::trace() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return impl_->history.entries();
}

size_t CachingAllocator::reservedBytes() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return static_cast<size_t>(impl_->stats.reserved_bytes[kAggregate].current);
}

size_t CachingAllocator::allocatedBytes() const {
  std::lock_guard<SpinLock> lock(impl_->mutex);
  return static_cast<size_t>(impl_->stats.allocated_bytes[kAggregate].current);
}

void CachingAllocator::lockForFork() { impl_->mutex.lock(); }
void CachingAllocator::unlockAfterFork() { impl_->mutex.unlock(); }

}  // namespace npusim::runtime

// Private memory pools of the caching allocator (graph pools, MemPool).
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Error.h"

using namespace npusim::runtime;

namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kPad = CachingAllocator::kPadBytes;  // a request of n MiB - kPad gets a block of n MiB

// Every stream's work is complete at once: pools, not stream reuse, are tested.
class ImmediateStreams : public StreamUseTracker {
 public:
  uint64_t markStreamUse(StreamId) override { return 0; }
  bool isComplete(uint64_t) override { return true; }
  void synchronizeDevice() override {}
};

struct Pools {
  explicit Pools(size_t capacity = 256 * kMiB, AllocatorConfig config = AllocatorConfig())
      : memory(0, capacity), allocator(0, memory, streams, config) {}
  DeviceMemory memory;
  ImmediateStreams streams;
  CachingAllocator allocator;

  // Segments of pool `id` (the snapshot's segment_pool_id).
  std::vector<SegmentInfo> segmentsOf(MempoolId id) const {
    std::vector<SegmentInfo> result;
    for (const SegmentInfo& segment : allocator.snapshot()) {
      if (segment.pool == id) result.push_back(segment);
    }
    return result;
  }
  bool inPool(void* ptr, MempoolId id) const {
    const auto address = reinterpret_cast<uintptr_t>(ptr);
    for (const SegmentInfo& segment : segmentsOf(id)) {
      if (address >= segment.address && address < segment.address + segment.total_size) return true;
    }
    return false;
  }
};

PoolFilter everyStream() {
  return [](StreamId) { return true; };
}

}  // namespace

TEST(PrivatePoolTest, IdsAreUniqueAndShapedAsUpstream) {
  const MempoolId user = newMempoolId(true);
  const MempoolId graph = newMempoolId(false);
  EXPECT_EQ(user.first, 0u);
  EXPECT_GT(user.second, 0u);
  EXPECT_GT(graph.first, 0u);
  EXPECT_EQ(graph.second, 0u);
  EXPECT_NE(newMempoolId(true), user);
}

TEST(PrivatePoolTest, AllocationsInsideComeOnlyFromThePoolsSegments) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* small = pools.allocator.allocate(4 * kKiB, 0);
  void* large = pools.allocator.allocate(3 * kMiB, 0);
  pools.allocator.endAllocateToPool(id);
  void* outside = pools.allocator.allocate(4 * kKiB, 0);

  EXPECT_TRUE(pools.inPool(small, id));
  EXPECT_TRUE(pools.inPool(large, id));
  EXPECT_FALSE(pools.inPool(outside, id));
  EXPECT_TRUE(pools.inPool(outside, kDefaultMempool));
  // One small and one large segment of its own; the default pool has its own small one.
  EXPECT_EQ(pools.segmentsOf(id).size(), 2u);
  EXPECT_EQ(pools.segmentsOf(kDefaultMempool).size(), 1u);
  for (void* ptr : {small, large, outside}) pools.allocator.free(ptr);
  pools.allocator.releasePool(id);
}

TEST(PrivatePoolTest, FreedBlocksServeOnlyThePool) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* first = pools.allocator.allocate(64 * kKiB, 0);
  pools.allocator.endAllocateToPool(id);
  pools.allocator.free(first);

  // The freed block is cached in the pool: a default request of the same
  // size carves a new segment instead of taking it.
  void* outside = pools.allocator.allocate(64 * kKiB, 0);
  EXPECT_NE(outside, first);
  EXPECT_FALSE(pools.inPool(outside, id));
  EXPECT_EQ(pools.allocator.stats().segment[kAggregate].current, 2);

  // Back in the pool, the cached block is reused.
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* again = pools.allocator.allocate(64 * kKiB, 0);
  pools.allocator.endAllocateToPool(id);
  EXPECT_EQ(again, first);
  EXPECT_EQ(pools.allocator.stats().segment[kAggregate].current, 2);
  pools.allocator.free(again);
  pools.allocator.free(outside);
  pools.allocator.releasePool(id);
}

TEST(PrivatePoolTest, TwoPoolsDoNotShare) {
  Pools pools;
  const MempoolId a = newMempoolId(true);
  const MempoolId b = newMempoolId(true);
  pools.allocator.beginAllocateToPool(a, everyStream());
  void* inA = pools.allocator.allocate(kKiB, 0);
  pools.allocator.endAllocateToPool(a);
  pools.allocator.free(inA);
  pools.allocator.beginAllocateToPool(b, everyStream());
  void* inB = pools.allocator.allocate(kKiB, 0);
  pools.allocator.endAllocateToPool(b);
  EXPECT_NE(inA, inB);
  EXPECT_TRUE(pools.inPool(inB, b));
  pools.allocator.free(inB);
  pools.allocator.releasePool(a);
  pools.allocator.releasePool(b);
}

TEST(PrivatePoolTest, FilterSelectsStreamsAndThreads) {
  Pools pools;
  const MempoolId byStream = newMempoolId(false);
  pools.allocator.beginAllocateToPool(byStream, [](StreamId stream) { return stream == 3; });
  void* onStream3 = pools.allocator.allocate(kKiB, 3);
  void* onStream0 = pools.allocator.allocate(kKiB, 0);
  pools.allocator.endAllocateToPool(byStream);
  EXPECT_TRUE(pools.inPool(onStream3, byStream));
  EXPECT_FALSE(pools.inPool(onStream0, byStream));

  // The filter runs on the allocating thread, so it can select a thread (use_mem_pool).
  const MempoolId byThread = newMempoolId(true);
  const std::thread::id owner = std::this_thread::get_id();
  pools.allocator.beginAllocateToPool(byThread, [owner](StreamId) { return std::this_thread::get_id() == owner; });
  void* mine = pools.allocator.allocate(kKiB, 0);
  void* theirs = nullptr;
  std::thread other([&] { theirs = pools.allocator.allocate(kKiB, 0); });
  other.join();
  pools.allocator.endAllocateToPool(byThread);
  EXPECT_TRUE(pools.inPool(mine, byThread));
  EXPECT_FALSE(pools.inPool(theirs, byThread));
  for (void* ptr : {onStream3, onStream0, mine, theirs}) pools.allocator.free(ptr);
  pools.allocator.releasePool(byStream);
  pools.allocator.releasePool(byThread);
}

TEST(PrivatePoolTest, UseCountFollowsCreateBeginAndRelease) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 0);
  pools.allocator.createOrIncrefPool(id);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 1);
  pools.allocator.beginAllocateToPool(id, everyStream());
  EXPECT_EQ(pools.allocator.poolUseCount(id), 2);
  EXPECT_THROW(pools.allocator.beginAllocateToPool(id, everyStream()), RuntimeError);
  pools.allocator.endAllocateToPool(id);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 2);
  pools.allocator.releasePool(id);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 1);
  pools.allocator.releasePool(id);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 0);
  EXPECT_TRUE(pools.allocator.pools().empty());
  try {
    pools.allocator.releasePool(id);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidParam);
  }
  EXPECT_THROW(pools.allocator.createOrIncrefPool(kDefaultMempool), RuntimeError);
}

TEST(PrivatePoolTest, EmptyCacheKeepsLivePoolsAndCanEmptyOnePool) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  pools.allocator.createOrIncrefPool(id);
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* inPool = pools.allocator.allocate(3 * kMiB, 0);
  pools.allocator.endAllocateToPool(id);
  void* outside = pools.allocator.allocate(3 * kMiB, 0);
  pools.allocator.free(inPool);
  pools.allocator.free(outside);
  EXPECT_EQ(pools.allocator.stats().segment[kAggregate].current, 2);

  pools.allocator.emptyCache();
  EXPECT_EQ(pools.segmentsOf(kDefaultMempool).size(), 0u);
  EXPECT_EQ(pools.segmentsOf(id).size(), 1u);  // the pool is alive: its cache stays
  EXPECT_EQ(pools.allocator.reservedBytes(), 20 * kMiB);

  pools.allocator.emptyCache(id);
  EXPECT_EQ(pools.allocator.reservedBytes(), 0u);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 2);  // created, then begun
  pools.allocator.releasePool(id);
  pools.allocator.releasePool(id);
  EXPECT_TRUE(pools.allocator.pools().empty());
}

TEST(PrivatePoolTest, ReleasedPoolFreesSegmentsWhenTheirBlocksAreFree) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* cached = pools.allocator.allocate(12 * kMiB - kPad, 0);
  void* live = pools.allocator.allocate(kKiB, 0);
  pools.allocator.endAllocateToPool(id);
  pools.allocator.free(cached);
  const size_t before = pools.memory.used();
  EXPECT_EQ(before, 12 * kMiB + 2 * kMiB);

  pools.allocator.releasePool(id);
  // The cached segment goes back at once; the one with a live block stays.
  EXPECT_EQ(pools.memory.used(), 2 * kMiB);
  EXPECT_EQ(pools.allocator.poolUseCount(id), 0);
  ASSERT_EQ(pools.allocator.pools().size(), 1u);
  pools.allocator.free(live);
  EXPECT_EQ(pools.memory.used(), 0u);
  EXPECT_TRUE(pools.allocator.pools().empty());
  EXPECT_EQ(pools.allocator.stats().segment[kAggregate].current, 0);
  EXPECT_EQ(pools.allocator.stats().reserved_bytes[kAggregate].current, 0);
}

TEST(PrivatePoolTest, OomFreesReleasedPoolsButNotLiveOnes) {
  Pools pools(40 * kMiB);
  const MempoolId live = newMempoolId(true);
  pools.allocator.beginAllocateToPool(live, everyStream());
  void* held = pools.allocator.allocate(20 * kMiB - kPad, 0);
  pools.allocator.endAllocateToPool(live);
  pools.allocator.free(held);  // cached in a live pool: not free for others

  void* fits = pools.allocator.allocate(18 * kMiB - kPad, 0);  // 20 MiB + 18 MiB of 40
  EXPECT_THROW(pools.allocator.allocate(18 * kMiB - kPad, 0), OutOfMemoryError);
  EXPECT_EQ(pools.segmentsOf(live).size(), 1u);

  pools.allocator.releasePool(live);  // its cache goes back: room again
  void* now = pools.allocator.allocate(18 * kMiB - kPad, 0);
  EXPECT_NE(now, nullptr);
  pools.allocator.free(fits);
  pools.allocator.free(now);
}

TEST(PrivatePoolTest, UseOnOomPoolLendsItsCachedBlocks) {
  Pools pools(40 * kMiB);
  const MempoolId id = newMempoolId(true);
  pools.allocator.createOrIncrefPool(id, PoolOptions{false, true});
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* held = pools.allocator.allocate(20 * kMiB - kPad, 0);
  pools.allocator.endAllocateToPool(id);
  pools.allocator.free(held);
  void* fits = pools.allocator.allocate(18 * kMiB - kPad, 0);
  void* lent = pools.allocator.allocate(18 * kMiB - kPad, 0);  // no room on the device: the pool's block
  EXPECT_EQ(lent, held);
  pools.allocator.free(lent);
  pools.allocator.free(fits);
  pools.allocator.releasePool(id);
  pools.allocator.releasePool(id);
  EXPECT_TRUE(pools.allocator.pools().empty());
}

TEST(PrivatePoolTest, NoSplitPoolHandsOutWholeBlocks) {
  Pools pools;
  const MempoolId id = newMempoolId(true);
  pools.allocator.createOrIncrefPool(id, PoolOptions{true, false});
  pools.allocator.beginAllocateToPool(id, everyStream());
  void* ptr = pools.allocator.allocate(kKiB, 0);
  pools.allocator.endAllocateToPool(id);
  EXPECT_EQ(pools.allocator.allocationSize(ptr), 2 * kMiB);
  pools.allocator.free(ptr);
  pools.allocator.releasePool(id);
  pools.allocator.releasePool(id);
}

TEST(PrivatePoolTest, DestroyingTheAllocatorWithPoolsGivesEverythingBack) {
  DeviceMemory memory(0, 64 * kMiB);
  ImmediateStreams streams;
  {
    CachingAllocator allocator(0, memory, streams, AllocatorConfig());
    const MempoolId id = newMempoolId(true);
    allocator.beginAllocateToPool(id, everyStream());
    allocator.allocate(kKiB, 0);
    allocator.allocate(12 * kMiB - kPad, 0);
  }
  EXPECT_EQ(memory.used(), 0u);
}

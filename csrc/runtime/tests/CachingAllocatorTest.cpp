#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
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

// Streams complete their work only when the test says so.
class FakeStreamTracker : public StreamUseTracker {
 public:
  uint64_t markStreamUse(StreamId stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    markers_.emplace_back(stream, submitted_[stream] += 1);
    return markers_.size() - 1;
  }
  bool isComplete(uint64_t marker) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [stream, sequence] = markers_.at(marker);
    return completed_[stream] >= sequence;
  }
  void synchronizeDevice() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++synchronizations_;
    for (auto& [stream, count] : submitted_) completed_[stream] = count;
  }
  void complete(StreamId stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_[stream] = submitted_[stream];
  }
  int synchronizations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return synchronizations_;
  }
  size_t markers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return markers_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<StreamId, uint64_t>> markers_;
  std::map<StreamId, uint64_t> submitted_;
  std::map<StreamId, uint64_t> completed_;
  int synchronizations_ = 0;
};

struct Fixture {
  explicit Fixture(size_t capacity = 256 * kMiB, AllocatorConfig config = AllocatorConfig(), int device = 0)
      : memory(device, capacity), allocator(device, memory, tracker, config) {}
  DeviceMemory memory;
  FakeStreamTracker tracker;
  CachingAllocator allocator;
};

char* at(void* ptr, size_t offset) { return static_cast<char*>(ptr) + offset; }

}  // namespace

TEST(CachingAllocatorTest, RoundsWithPaddingTo512Bytes) {
  AllocatorConfig config;
  EXPECT_EQ(CachingAllocator::roundSize(1, config), 512u);
  EXPECT_EQ(CachingAllocator::roundSize(480, config), 512u);
  EXPECT_EQ(CachingAllocator::roundSize(481, config), 1024u);
  EXPECT_EQ(CachingAllocator::roundSize(512, config), 1024u);  // +32 bytes of padding on 910B
  EXPECT_EQ(CachingAllocator::roundSize(kMiB - 32, config), kMiB);
  EXPECT_EQ(CachingAllocator::roundSize(kMiB, config), kMiB + 512);
}

TEST(CachingAllocatorTest, RoundsToPowerOfTwoDivisionsWhenConfigured) {
  AllocatorConfig config = AllocatorConfig::parse("roundup_power2_divisions:4");
  EXPECT_EQ(CachingAllocator::roundSize(1000, config), 1536u);  // too small to divide
  EXPECT_EQ(CachingAllocator::roundSize(9000, config), 10240u);  // 8 KiB + 2 KiB steps
  EXPECT_EQ(CachingAllocator::roundSize(5 * kMiB - 32, config), 5 * kMiB);
  EXPECT_EQ(CachingAllocator::roundSize(5 * kMiB, config), 6 * kMiB);
  EXPECT_EQ(CachingAllocator::roundSize(8 * kMiB - 32, config), 8 * kMiB);  // a power of two stays
}

TEST(CachingAllocatorTest, SegmentSizesFollowThePools) {
  AllocatorConfig config;
  EXPECT_EQ(CachingAllocator::segmentSizeFor(512, config), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(kMiB, config), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(kMiB + 512, config), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(10 * kMiB - 512, config), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(10 * kMiB, config), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(12 * kMiB + 512, config), 14 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(3 * kMiB, AllocatorConfig::parse("large_segment_size_mb:64")),
            64 * kMiB);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(3 * kMiB, AllocatorConfig::parse("page_size:1g")), size_t{1} << 30);
  EXPECT_EQ(CachingAllocator::segmentSizeFor(512, AllocatorConfig::parse("page_size:1g")), 2 * kMiB);
}

TEST(CachingAllocatorTest, ZeroBytesGivesNullAndOneExabyteIsRefused) {
  Fixture f;
  EXPECT_EQ(f.allocator.allocate(0, 0), nullptr);
  f.allocator.free(nullptr);
  try {
    f.allocator.allocate(size_t{1} << 60, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_STREQ(error.what(), "NPU out of memory. Tried to allocate more than 1EB memory.");
  }
  EXPECT_EQ(f.allocator.reservedBytes(), 0u);
}

TEST(CachingAllocatorTest, SmallRequestsArePackedIntoOneTwoMegabyteSegment) {
  Fixture f;
  void* a = f.allocator.allocate(900, 0);
  void* b = f.allocator.allocate(900, 0);
  EXPECT_EQ(at(a, 1024), b);
  EXPECT_EQ(f.allocator.allocationSize(a), 1024u);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.segment[kSmallPool].current, 1);
  EXPECT_EQ(stats.segment[kLargePool].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].current, 2048);
  EXPECT_EQ(stats.requested_bytes[kAggregate].current, 1800);
  EXPECT_EQ(stats.num_device_alloc, 1);
  EXPECT_EQ(f.memory.used(), 2 * kMiB);
  f.allocator.free(a);
  f.allocator.free(b);
}

TEST(CachingAllocatorTest, MidSizedRequestsShareATwentyMegabyteSegment) {
  Fixture f;
  void* a = f.allocator.allocate(3 * kMiB, 0);
  void* b = f.allocator.allocate(3 * kMiB, 0);
  EXPECT_EQ(at(a, 3 * kMiB + 512), b);
  EXPECT_EQ(f.allocator.reservedBytes(), 20 * kMiB);
  void* big = f.allocator.allocate(16 * kMiB, 0);  // too big for the rest: own segment, rounded to 2 MiB
  EXPECT_EQ(f.allocator.reservedBytes(), 38 * kMiB);
  EXPECT_EQ(f.allocator.stats().segment[kLargePool].current, 2);
  f.allocator.free(a);
  f.allocator.free(b);
  f.allocator.free(big);
}

TEST(CachingAllocatorTest, LargeBlocksSplitOnlyWhenMoreThanOneMegabyteRemains) {
  Fixture f;
  void* splits = f.allocator.allocate(18 * kMiB + 512 * kKiB, 0);  // 20 MiB segment, 1.5 MiB left
  EXPECT_EQ(f.allocator.allocationSize(splits), 18 * kMiB + 512 * kKiB + 512);
  EXPECT_EQ(f.allocator.stats().inactive_split[kLargePool].current, 1);
  void* whole = f.allocator.allocate(19 * kMiB, 1);  // 20 MiB segment, under 1 MiB left
  EXPECT_EQ(f.allocator.allocationSize(whole), 20 * kMiB);
  f.allocator.free(splits);
  f.allocator.free(whole);
  EXPECT_EQ(f.allocator.stats().inactive_split[kAggregate].current, 0);
}

TEST(CachingAllocatorTest, FreedBlocksAreCachedAndReusedBestFit) {
  Fixture f;
  void* a = f.allocator.allocate(40 * kMiB, 0);
  void* b = f.allocator.allocate(12 * kMiB, 0);
  f.allocator.free(a);
  f.allocator.free(b);
  EXPECT_EQ(f.allocator.reservedBytes(), 42 * kMiB + 14 * kMiB);
  EXPECT_EQ(f.allocator.allocatedBytes(), 0u);
  void* again = f.allocator.allocate(11 * kMiB, 0);  // best fit: the 14 MiB block
  EXPECT_EQ(again, b);
  EXPECT_EQ(f.allocator.stats().num_device_alloc, 2);
  f.allocator.free(again);
}

TEST(CachingAllocatorTest, FreedNeighboursMergeBackIntoOneBlock) {
  Fixture f;
  void* a = f.allocator.allocate(4000, 0);
  void* b = f.allocator.allocate(4000, 0);
  void* c = f.allocator.allocate(4000, 0);
  f.allocator.free(b);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.inactive_split[kSmallPool].current, 2);  // the hole and the tail
  f.allocator.free(a);
  EXPECT_EQ(f.allocator.stats().inactive_split[kSmallPool].current, 2);  // a+b merged
  f.allocator.free(c);
  stats = f.allocator.stats();
  EXPECT_EQ(stats.inactive_split[kAggregate].current, 0);
  EXPECT_EQ(stats.inactive_split_bytes[kAggregate].current, 0);
  std::vector<SegmentInfo> segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(segments[0].blocks.size(), 1u);
  EXPECT_EQ(segments[0].blocks[0].size, 2 * kMiB);
  EXPECT_FALSE(segments[0].blocks[0].allocated);
  // The merged block serves a request as large as the whole segment.
  void* whole = f.allocator.allocate(kMiB - 32, 0);
  EXPECT_EQ(whole, a);
  f.allocator.free(whole);
}

// A split remainder and a merged block keep their pool node only where they
// still sort there; otherwise they move, and best fit still finds them.
TEST(CachingAllocatorTest, SplitRemaindersAndMergedBlocksStayInBestFitOrder) {
  Fixture f;
  // Requests of 512 * n - 32 bytes take blocks of 512 * n.
  auto blocks = [](size_t n) { return n * 512 - 32; };
  void* c = f.allocator.allocate(blocks(2), 0);      // 1024
  void* guard1 = f.allocator.allocate(blocks(1), 0);
  void* b = f.allocator.allocate(blocks(4), 0);      // 2048
  void* guard2 = f.allocator.allocate(blocks(1), 0);
  f.allocator.free(c);
  f.allocator.free(b);  // cached: c (1024), b (2048) and the segment's tail
  // 1536 takes b; its 512-byte remainder now sorts before c: it must move.
  void* split = f.allocator.allocate(blocks(3), 0);
  EXPECT_EQ(split, b);
  void* remainder = f.allocator.allocate(blocks(1), 0);  // best fit: the remainder, not c
  EXPECT_EQ(remainder, at(b, 1536));
  void* reusedC = f.allocator.allocate(blocks(2), 0);
  EXPECT_EQ(reusedC, c);
  // A free that merges into a cached neighbour whose node sorts before a
  // larger cached block: the merged block outgrows that block and moves.
  void* d = f.allocator.allocate(blocks(2), 0);  // from the tail: 1024
  void* guard3 = f.allocator.allocate(blocks(1), 0);
  EXPECT_EQ(d, at(guard2, 512));
  f.allocator.free(d);
  f.allocator.free(remainder);  // cached: 512 (after `split`), 1024 (d), the tail
  f.allocator.free(split);      // merges with the 512 after it: 2048, past d's 1024
  void* merged = f.allocator.allocate(blocks(4), 0);  // best fit: the merged block
  EXPECT_EQ(merged, b);
  void* reusedD = f.allocator.allocate(blocks(2), 0);
  EXPECT_EQ(reusedD, d);
  for (void* p : {reusedC, guard1, merged, guard2, reusedD, guard3}) f.allocator.free(p);
  std::vector<SegmentInfo> segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(segments[0].blocks.size(), 1u);  // everything merged back
  EXPECT_EQ(f.allocator.stats().inactive_split[kAggregate].current, 0);
}

TEST(CachingAllocatorTest, BlocksAreReusedOnlyOnTheirOwnStream) {
  Fixture f;
  void* a = f.allocator.allocate(5000, 0);
  f.allocator.free(a);
  void* other = f.allocator.allocate(5000, 7);
  EXPECT_NE(other, a);
  EXPECT_EQ(f.allocator.stats().segment[kSmallPool].current, 2);
  void* same = f.allocator.allocate(5000, 0);
  EXPECT_EQ(same, a);
  std::vector<SegmentInfo> segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_NE(segments[0].stream, segments[1].stream);
  f.allocator.free(other);
  f.allocator.free(same);
}

TEST(CachingAllocatorTest, RecordStreamDefersReuseUntilTheStreamCompletes) {
  Fixture f;
  void* a = f.allocator.allocate(5000, 0);
  f.allocator.recordStream(a, 3);
  f.allocator.recordStream(a, 3);  // recorded once
  f.allocator.free(a);
  EXPECT_EQ(f.tracker.markers(), 1u);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.active[kAggregate].current, 1);  // still in use by stream 3
  std::vector<SegmentInfo> segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_FALSE(segments[0].blocks[0].allocated);
  EXPECT_TRUE(segments[0].blocks[0].active);

  void* b = f.allocator.allocate(5000, 0);
  EXPECT_NE(b, a);  // not reused while stream 3 runs
  f.allocator.free(b);
  f.tracker.complete(3);
  void* c = f.allocator.allocate(5000, 0);
  EXPECT_EQ(c, a);  // reusable now
  EXPECT_EQ(f.allocator.stats().active[kAggregate].current, 1);
  f.allocator.free(c);
}

TEST(CachingAllocatorTest, EraseStreamLetsTheBlockBeReusedAtOnce) {
  Fixture f;
  void* a = f.allocator.allocate(5000, 0);
  f.allocator.recordStream(a, 3);
  f.allocator.eraseStream(a, 3);
  f.allocator.eraseStream(a, 4);  // never recorded: nothing to undo
  f.allocator.free(a);
  EXPECT_EQ(f.tracker.markers(), 0u);
  void* b = f.allocator.allocate(5000, 0);
  EXPECT_EQ(b, a);  // no wait for stream 3
  f.allocator.free(b);
}

TEST(CachingAllocatorTest, RecordStreamOnTheAllocationStreamNeedsNoMarker) {
  Fixture f;
  void* a = f.allocator.allocate(5000, 2);
  f.allocator.recordStream(a, 2);
  f.allocator.free(a);
  EXPECT_EQ(f.tracker.markers(), 0u);
  EXPECT_EQ(f.allocator.allocate(5000, 2), a);
  f.allocator.free(a);
}

TEST(CachingAllocatorTest, StatisticsTrackCurrentPeakAndTotals) {
  Fixture f;
  void* a = f.allocator.allocate(900, 0);
  void* b = f.allocator.allocate(3 * kMiB, 0);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 2);
  EXPECT_EQ(stats.allocation[kSmallPool].current, 1);
  EXPECT_EQ(stats.allocation[kLargePool].current, 1);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].current, static_cast<int64_t>(1024 + 3 * kMiB + 512));
  EXPECT_EQ(stats.requested_bytes[kAggregate].current, static_cast<int64_t>(900 + 3 * kMiB));
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<int64_t>(22 * kMiB));
  EXPECT_EQ(stats.segment[kAggregate].current, 2);
  EXPECT_EQ(stats.max_split_size, -1);
  f.allocator.free(a);
  f.allocator.free(b);
  stats = f.allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.allocation[kAggregate].peak, 2);
  EXPECT_EQ(stats.allocation[kAggregate].allocated, 2);
  EXPECT_EQ(stats.allocation[kAggregate].freed, 2);
  EXPECT_EQ(stats.active_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.requested_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].peak, static_cast<int64_t>(1024 + 3 * kMiB + 512));
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, static_cast<int64_t>(22 * kMiB));

  f.allocator.resetPeakStats();
  EXPECT_EQ(f.allocator.stats().allocation[kAggregate].peak, 0);
  EXPECT_EQ(f.allocator.stats().reserved_bytes[kAggregate].peak, static_cast<int64_t>(22 * kMiB));
  f.allocator.resetAccumulatedStats();
  stats = f.allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].allocated, 0);
  EXPECT_EQ(stats.allocation[kAggregate].freed, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
}

TEST(CachingAllocatorTest, SnapshotListsSegmentsByAddressWithTheirBlocks) {
  Fixture f(256 * kMiB, AllocatorConfig(), 5);
  void* small = f.allocator.allocate(900, 0);
  void* large = f.allocator.allocate(3 * kMiB, 1);
  std::vector<SegmentInfo> segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_LT(segments[0].address, segments[1].address);
  for (const SegmentInfo& segment : segments) {
    EXPECT_EQ(segment.device, 5);
    EXPECT_FALSE(segment.is_expandable);
    ASSERT_EQ(segment.blocks.size(), 2u);  // the allocation and the free tail
    EXPECT_TRUE(segment.blocks[0].allocated);
    EXPECT_FALSE(segment.blocks[1].allocated);
    if (segment.is_large) {
      EXPECT_EQ(segment.address, reinterpret_cast<uintptr_t>(large));
      EXPECT_EQ(segment.stream, 1);
      EXPECT_EQ(segment.total_size, 20 * kMiB);
      EXPECT_EQ(segment.allocated_size, 3 * kMiB + 512);
      EXPECT_EQ(segment.requested_size, 3 * kMiB);
    } else {
      EXPECT_EQ(segment.address, reinterpret_cast<uintptr_t>(small));
      EXPECT_EQ(segment.total_size, 2 * kMiB);
      EXPECT_EQ(segment.active_size, 1024u);
      EXPECT_EQ(segment.requested_size, 900u);
    }
  }
  f.allocator.free(small);
  f.allocator.free(large);
}

TEST(CachingAllocatorTest, OutOfMemoryTextIsTorchNpusAndTheAllocatorRecovers) {
  Fixture f(64 * kMiB, AllocatorConfig(), 3);
  void* held = f.allocator.allocate(40 * kMiB, 0);  // 42 MiB segment
  try {
    f.allocator.allocate(30 * kMiB, 0);  // needs a 32 MiB segment, 22 MiB free
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.device(), 3);
    EXPECT_STREQ(error.what(),
                 "NPU out of memory. Tried to allocate 32.00 MiB (NPU 3; 64.00 MiB total capacity; "
                 "40.00 MiB already allocated; 40.00 MiB current active; 22.00 MiB free; "
                 "42.00 MiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
                 "max_split_size_mb to avoid fragmentation.");
  }
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_GE(f.tracker.synchronizations(), 1);
  EXPECT_EQ(stats.allocation[kAggregate].current, 1);

  f.allocator.free(held);
  void* fits = f.allocator.allocate(30 * kMiB, 0);  // served from the cached 42 MiB block
  EXPECT_EQ(fits, held);
  f.allocator.free(fits);
  f.allocator.emptyCache();
  EXPECT_EQ(f.allocator.reservedBytes(), 0u);
  EXPECT_EQ(f.memory.used(), 0u);
  void* whole = f.allocator.allocate(60 * kMiB, 1);
  EXPECT_NE(whole, nullptr);
  f.allocator.free(whole);
}

TEST(CachingAllocatorTest, FormatsSizesLikeTorch) {
  EXPECT_EQ(formatMemorySize(0), "0 bytes");
  EXPECT_EQ(formatMemorySize(1024), "1024 bytes");
  EXPECT_EQ(formatMemorySize(1536), "1.50 KiB");
  EXPECT_EQ(formatMemorySize(kMiB), "1024.00 KiB");
  EXPECT_EQ(formatMemorySize(22 * kMiB), "22.00 MiB");
  EXPECT_EQ(formatMemorySize(size_t{1} << 30), "1024.00 MiB");
  EXPECT_EQ(formatMemorySize(static_cast<uint64_t>(60.97 * (1 << 30))), "60.97 GiB");
}

TEST(CachingAllocatorTest, CachedBlocksOfOtherStreamsAreFreedAndRetriedBeforeOom) {
  Fixture f(64 * kMiB);
  void* a = f.allocator.allocate(40 * kMiB, 0);
  f.allocator.free(a);  // 42 MiB cached on stream 0
  void* b = f.allocator.allocate(50 * kMiB, 1);
  ASSERT_NE(b, nullptr);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.num_sync_all_streams, 1);
  EXPECT_EQ(f.tracker.synchronizations(), 1);
  EXPECT_EQ(f.allocator.reservedBytes(), 52 * kMiB);
  f.allocator.free(b);
}

TEST(CachingAllocatorTest, PendingStreamUsesAreSettledBeforeAnOom) {
  Fixture f(64 * kMiB);
  void* a = f.allocator.allocate(40 * kMiB, 0);
  f.allocator.recordStream(a, 1);
  f.allocator.free(a);  // waits for stream 1
  void* b = f.allocator.allocate(50 * kMiB, 0);  // synchronizes, frees a's segment, retries
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.allocator.stats().active[kAggregate].current, 1);
  f.allocator.free(b);
}

TEST(CachingAllocatorTest, MemoryFractionLimitsReservedMemory) {
  Fixture f(64 * kMiB);
  EXPECT_DOUBLE_EQ(f.allocator.memoryFraction(), 1.0);
  f.allocator.setMemoryFraction(0.5);
  EXPECT_DOUBLE_EQ(f.allocator.memoryFraction(), 0.5);
  void* a = f.allocator.allocate(30 * kMiB, 0);  // 32 MiB: exactly the allowance
  try {
    f.allocator.allocate(100, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_STREQ(error.what(),
                 "NPU out of memory. Tried to allocate 2.00 MiB (NPU 0; 64.00 MiB total capacity; "
                 "30.00 MiB already allocated; 30.00 MiB current active; 32.00 MiB free; 32.00 MiB allowed; "
                 "32.00 MiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
                 "max_split_size_mb to avoid fragmentation.");
  }
  EXPECT_EQ(f.allocator.stats().num_ooms, 1);
  f.allocator.setMemoryFraction(1.0);
  void* b = f.allocator.allocate(100, 0);
  EXPECT_NE(b, nullptr);
  f.allocator.free(a);
  f.allocator.free(b);
  EXPECT_THROW(f.allocator.setMemoryFraction(1.5), RuntimeError);
  EXPECT_THROW(f.allocator.setMemoryFraction(-0.1), RuntimeError);
}

TEST(CachingAllocatorTest, MemoryFractionFromTheConfiguration) {
  Fixture f(64 * kMiB, AllocatorConfig::parse("per_process_memory_fraction:0.25"));
  EXPECT_DOUBLE_EQ(f.allocator.memoryFraction(), 0.25);
  EXPECT_THROW(f.allocator.allocate(20 * kMiB, 0), OutOfMemoryError);
  void* fits = f.allocator.allocate(14 * kMiB, 0);  // 16 MiB segment
  f.allocator.free(fits);
}

TEST(CachingAllocatorTest, EmptyCacheReleasesOnlyWhollyFreeSegments) {
  Fixture f;
  void* a = f.allocator.allocate(1000, 0);
  void* b = f.allocator.allocate(1000, 0);
  void* c = f.allocator.allocate(30 * kMiB, 0);
  f.allocator.free(b);
  f.allocator.free(c);
  f.allocator.emptyCache();
  EXPECT_EQ(f.tracker.synchronizations(), 1);
  EXPECT_EQ(f.allocator.reservedBytes(), 2 * kMiB);  // a's segment stays
  EXPECT_EQ(f.memory.used(), 2 * kMiB);
  f.allocator.free(a);
  f.allocator.emptyCache();
  EXPECT_EQ(f.allocator.reservedBytes(), 0u);
  EXPECT_EQ(f.allocator.stats().num_device_free, 2);
}

TEST(CachingAllocatorTest, CachingDisabledReturnsEveryFreeAtOnce) {
  AllocatorConfig config;
  config.cachingDisabled = true;
  Fixture f(64 * kMiB, config);
  void* a = f.allocator.allocate(900, 0);
  void* b = f.allocator.allocate(900, 0);
  EXPECT_EQ(f.allocator.reservedBytes(), 2048u);
  EXPECT_EQ(f.allocator.allocatedBytes(), 2048u);
  f.allocator.free(a);
  EXPECT_EQ(f.allocator.reservedBytes(), 1024u);
  f.allocator.recordStream(b, 4);
  f.allocator.free(b);
  EXPECT_EQ(f.allocator.reservedBytes(), 1024u);  // stream 4 still uses it
  f.tracker.complete(4);
  void* c = f.allocator.allocate(3 * kMiB, 0);
  EXPECT_EQ(f.allocator.reservedBytes(), 3 * kMiB + 512);
  f.allocator.free(c);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.num_device_alloc, 3);
  EXPECT_EQ(stats.num_device_free, 3);
  EXPECT_EQ(f.memory.used(), 0u);
}

TEST(CachingAllocatorTest, BadPointersRaiseInvalidHandleAndChangeNothing) {
  Fixture f;
  void* a = f.allocator.allocate(1000, 0);
  int onStack = 0;
  try {
    f.allocator.free(&onStack);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtInvalidHandle);
    EXPECT_NE(error.detail().find("invalid device pointer"), std::string::npos);
  }
  EXPECT_THROW(f.allocator.free(at(a, 512)), RuntimeError);  // inside a block, not its start
  EXPECT_THROW(f.allocator.recordStream(&onStack, 1), RuntimeError);
  EXPECT_THROW(f.allocator.allocationSize(&onStack), RuntimeError);
  f.allocator.free(a);
  EXPECT_THROW(f.allocator.free(a), RuntimeError);  // double free
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.allocation[kAggregate].freed, 1);
  void* b = f.allocator.allocate(1000, 0);
  EXPECT_EQ(b, a);
  f.allocator.free(b);
}

TEST(CachingAllocatorTest, OversizeBlocksAreNotSplitAndServeOnlyNearSizes) {
  Fixture f(256 * kMiB, AllocatorConfig::parse("max_split_size_mb:40"));
  EXPECT_EQ(f.allocator.stats().max_split_size, static_cast<int64_t>(40 * kMiB));
  void* big = f.allocator.allocate(50 * kMiB, 0);  // 52 MiB oversize segment
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.oversize_segments.current, 1);
  EXPECT_EQ(stats.oversize_allocations.current, 1);
  f.allocator.free(big);
  void* medium = f.allocator.allocate(12 * kMiB, 0);  // may not take the oversize block
  EXPECT_NE(medium, big);
  void* near = f.allocator.allocate(45 * kMiB, 0);  // within 20 MiB: takes it whole
  EXPECT_EQ(near, big);
  EXPECT_EQ(f.allocator.allocationSize(near), 52 * kMiB);
  f.allocator.free(near);
  void* far = f.allocator.allocate(30 * kMiB, 0);  // not oversize: new segment
  EXPECT_NE(far, big);
  f.allocator.free(far);
  f.allocator.free(medium);
  EXPECT_EQ(f.allocator.stats().oversize_allocations.current, 0);
}

TEST(CachingAllocatorTest, OversizeCachedBlocksAreReleasedUnderPressureWithoutARetry) {
  Fixture f(100 * kMiB, AllocatorConfig::parse("max_split_size_mb:40"));
  void* big = f.allocator.allocate(80 * kMiB, 0);  // 82 MiB
  f.allocator.free(big);
  void* next = f.allocator.allocate(45 * kMiB, 0);  // 82 MiB is too far above; 46 MiB does not fit beside it
  ASSERT_NE(next, nullptr);
  MemoryStats stats = f.allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(f.allocator.reservedBytes(), 46 * kMiB);
  f.allocator.free(next);
}

TEST(CachingAllocatorTest, GarbageCollectionFreesIdleSegmentsPastTheThreshold) {
  Fixture f(100 * kMiB, AllocatorConfig::parse("garbage_collection_threshold:0.5"));
  f.allocator.setMemoryFraction(1.0);
  void* a = f.allocator.allocate(30 * kMiB, 0);
  void* b = f.allocator.allocate(30 * kMiB, 1);
  f.allocator.free(a);
  f.allocator.free(b);
  EXPECT_EQ(f.allocator.reservedBytes(), 64 * kMiB);
  void* c = f.allocator.allocate(20 * kMiB, 2);  // 64 MiB > 50 MiB: collect before carving
  MemoryStats stats = f.allocator.stats();
  EXPECT_GE(stats.num_device_free, 1);
  EXPECT_LE(f.allocator.reservedBytes(), 54 * kMiB);
  EXPECT_EQ(stats.num_alloc_retries, 0);
  f.allocator.free(c);
}

TEST(CachingAllocatorTest, DestructorReturnsAllMemory) {
  DeviceMemory memory(0, 64 * kMiB);
  FakeStreamTracker tracker;
  {
    CachingAllocator allocator(0, memory, tracker, AllocatorConfig());
    allocator.allocate(1000, 0);
    void* pending = allocator.allocate(5 * kMiB, 0);
    allocator.recordStream(pending, 1);
    allocator.free(pending);
    EXPECT_GT(memory.used(), 0u);
  }
  EXPECT_EQ(memory.used(), 0u);
}

TEST(CachingAllocatorConcurrencyTest, ManyThreadsAllocateRecordAndFree) {
  DeviceMemory memory(0, 512 * kMiB);
  FakeStreamTracker tracker;
  CachingAllocator allocator(0, memory, tracker, AllocatorConfig::parse("max_split_size_mb:64"));
  constexpr int kThreads = 4;
  constexpr int kIterations = 1500;
  const size_t sizes[] = {100, 4000, 300 * kKiB, 2 * kMiB, 12 * kMiB, 70 * kMiB};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(1234 + t);
      struct Live {
        char* ptr;
        size_t size;
      };
      std::vector<Live> live;
      const StreamId stream = t % 2;
      for (int i = 0; i < kIterations; ++i) {
        int action = static_cast<int>(random() % 100);
        if (action < 55 && live.size() < 6) {
          size_t size = sizes[random() % std::size(sizes)];
          try {
            char* ptr = static_cast<char*>(allocator.allocate(size, stream));
            ptr[0] = static_cast<char>(t);
            ptr[size - 1] = static_cast<char>(t);
            if (random() % 4 == 0) allocator.recordStream(ptr, 2 + static_cast<StreamId>(random() % 3));
            live.push_back({ptr, size});
          } catch (const OutOfMemoryError&) {
            // Possible under pressure from the other threads; the allocator must stay usable.
          }
        } else if (!live.empty()) {
          size_t index = random() % live.size();
          Live block = live[index];
          if (block.ptr[0] != static_cast<char>(t) || block.ptr[block.size - 1] != static_cast<char>(t)) {
            failures += 1;  // somebody else wrote into our block
          }
          allocator.free(block.ptr);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
        }
        if (action == 99) tracker.complete(2 + static_cast<StreamId>(random() % 3));
        if (action == 98 && t == 0) allocator.emptyCache();
        if (action == 97) {
          (void)allocator.stats();
          (void)allocator.snapshot();
        }
      }
      for (const Live& block : live) allocator.free(block.ptr);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  allocator.emptyCache();
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAggregate].current, 0);
  EXPECT_EQ(stats.active[kAggregate].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(stats.inactive_split[kAggregate].current, 0);
  EXPECT_EQ(memory.used(), 0u);
}

TEST(CachingAllocatorTest, ReconfigureAppliesNewRoundingAndFraction) {
  Fixture f(512 * kMiB);
  void* before = f.allocator.allocate(65 * kMiB, 0);
  EXPECT_EQ(f.allocator.allocationSize(before), 66 * kMiB);  // the 2 MiB-rounded segment, whole
  AllocatorConfig config = AllocatorConfig::parse("roundup_power2_divisions:[8:1,64:4,128:8,256:2,>:16]");
  config.perProcessMemoryFraction = 0.5;
  f.allocator.reconfigure(config);
  void* after = f.allocator.allocate(65 * kMiB, 0);
  EXPECT_EQ(f.allocator.allocationSize(after), 80 * kMiB);
  EXPECT_DOUBLE_EQ(f.allocator.memoryFraction(), 0.5);
  f.allocator.free(before);
  f.allocator.free(after);
}

// torch_npu's recovery: live allocations marked unsafe stay unsafe until they are
// allocated anew or marked safe; memory this allocator did not hand out is safe.
TEST(CachingAllocatorTest, UnsafeMarksCoverLiveAllocationsUntilReallocatedOrMarkedSafe) {
  Fixture f;
  void* a = f.allocator.allocate(4 * kKiB, 0);
  void* b = f.allocator.allocate(4 * kKiB, 0);
  EXPECT_TRUE(f.allocator.isBlockSafe(a));
  f.allocator.markAllBlocksUnsafe();
  EXPECT_FALSE(f.allocator.isBlockSafe(a));
  EXPECT_FALSE(f.allocator.isBlockSafe(b));
  EXPECT_TRUE(f.allocator.isBlockSafe(nullptr));
  EXPECT_TRUE(f.allocator.isBlockSafe(at(a, 512)));  // not the start of an allocation
  f.allocator.markBlockSafe(b);
  EXPECT_TRUE(f.allocator.isBlockSafe(b));
  f.allocator.free(a);
  void* again = f.allocator.allocate(4 * kKiB, 0);  // the cached block, with fresh data
  EXPECT_EQ(again, a);
  EXPECT_TRUE(f.allocator.isBlockSafe(again));
  f.allocator.free(again);
  f.allocator.free(b);
}

// torch_npu's empty_virt_addr_cache: reserved memory drops, the physical memory
// stays taken until a new segment maps it again or emptyCache.
TEST(CachingAllocatorTest, EmptyVirtualAddressCacheKeepsPhysicalMemoryUntilRemappedOrEmptied) {
  Fixture f;
  const size_t freeBefore = f.memory.freeBytes();
  f.allocator.free(f.allocator.allocate(40 * kMiB, 0));
  f.allocator.emptyVirtualAddressCache();
  EXPECT_EQ(f.allocator.reservedBytes(), 0u);
  EXPECT_EQ(f.memory.freeBytes(), freeBefore - 42 * kMiB);
  void* again = f.allocator.allocate(40 * kMiB, 0);  // maps the kept memory again
  EXPECT_EQ(f.memory.freeBytes(), freeBefore - 42 * kMiB);
  f.allocator.free(again);
  f.allocator.emptyVirtualAddressCache();
  f.allocator.emptyCache();
  EXPECT_EQ(f.memory.freeBytes(), freeBefore);
}

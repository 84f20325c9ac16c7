#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "runtime/AllocatorConfig.h"
#include "runtime/Error.h"
#include "runtime/HostAllocator.h"

using namespace npusim::runtime;

namespace {
constexpr size_t kMiB = size_t{1} << 20;
}

TEST(HostAllocatorTest, RoundsUpToPowersOfTwo) {
  HostAllocator allocator;
  EXPECT_EQ(allocator.roundSize(1), 64u);
  EXPECT_EQ(allocator.roundSize(100), 128u);
  EXPECT_EQ(allocator.roundSize(4096), 4096u);
  EXPECT_EQ(allocator.roundSize(3 * kMiB), 4 * kMiB);
  EXPECT_EQ(allocator.allocate(0), nullptr);
  allocator.free(nullptr);
}

TEST(HostAllocatorTest, RoundThresholdKeepsLargeSizes) {
  HostAllocator allocator(AllocatorConfig::parse("pinned_max_round_threshold_mb:1"));
  EXPECT_EQ(allocator.roundSize(kMiB), kMiB);
  EXPECT_EQ(allocator.roundSize(600 * 1024), kMiB);
  EXPECT_EQ(allocator.roundSize(3 * kMiB + 1), 3 * kMiB + 64);
}

TEST(HostAllocatorTest, FreedBlocksAreCachedAndReused) {
  HostAllocator allocator;
  void* a = allocator.allocate(3000);
  std::memset(a, 1, 3000);
  EXPECT_EQ(allocator.allocationSize(a), 4096u);
  allocator.free(a);
  void* b = allocator.allocate(4000);  // same power of two
  EXPECT_EQ(b, a);
  void* c = allocator.allocate(5000);  // another size class
  EXPECT_NE(c, a);
  HostMemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_host_alloc, 2);
  EXPECT_EQ(stats.allocations.current, 2);
  EXPECT_EQ(stats.allocations.peak, 2);
  EXPECT_EQ(stats.allocated_bytes.current, 4096 + 8192);
  EXPECT_EQ(stats.reserved_bytes.current, 4096 + 8192);
  allocator.free(b);
  allocator.free(c);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.current, 0);
  EXPECT_EQ(stats.reserved_bytes.current, 4096 + 8192);
  allocator.emptyCache();
  stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes.current, 0);
  EXPECT_EQ(stats.num_host_free, 2);
  allocator.resetPeakStats();
  EXPECT_EQ(allocator.stats().allocations.peak, 0);
  allocator.resetAccumulatedStats();
  EXPECT_EQ(allocator.stats().num_host_alloc, 0);
}

TEST(HostAllocatorTest, IsPinnedCoversLiveAndCachedBlocks) {
  HostAllocator allocator;
  char* a = static_cast<char*>(allocator.allocate(1000));
  EXPECT_TRUE(allocator.isPinned(a));
  EXPECT_TRUE(allocator.isPinned(a + 999));
  EXPECT_TRUE(allocator.isPinned(a + 1023));  // inside the rounded block
  int onStack = 0;
  EXPECT_FALSE(allocator.isPinned(&onStack));
  EXPECT_FALSE(allocator.isPinned(nullptr));
  allocator.free(a);
  EXPECT_TRUE(allocator.isPinned(a + 10));  // cached
  allocator.emptyCache();
  EXPECT_FALSE(allocator.isPinned(a + 10));
}

TEST(HostAllocatorTest, BlocksAboveTheCachedLimitGoBackAtOnce) {
  HostAllocator allocator(AllocatorConfig::parse("pinned_max_cached_size_mb:1"));
  void* small = allocator.allocate(100);
  void* large = allocator.allocate(2 * kMiB);
  allocator.free(small);
  allocator.free(large);
  HostMemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_host_free, 1);
  EXPECT_EQ(stats.reserved_bytes.current, 128);
  EXPECT_FALSE(allocator.isPinned(large));
}

TEST(HostAllocatorTest, BadFreeRaisesInvalidHandle) {
  HostAllocator allocator;
  int onStack = 0;
  try {
    allocator.free(&onStack);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtInvalidHandle);
    EXPECT_EQ(error.call(), "aclrtFreeHost");
  }
  char* a = static_cast<char*>(allocator.allocate(100));
  EXPECT_THROW(allocator.free(a + 8), RuntimeError);
  allocator.free(a);
  EXPECT_THROW(allocator.free(a), RuntimeError);  // already free
  EXPECT_EQ(allocator.stats().allocations.current, 0);
}

TEST(HostAllocatorTest, InstanceIsOneObject) {
  HostAllocator& first = HostAllocator::instance();
  HostAllocator& second = HostAllocator::instance();
  EXPECT_EQ(&first, &second);
  void* ptr = first.allocate(256);
  EXPECT_TRUE(second.isPinned(ptr));
  first.free(ptr);
}

TEST(HostAllocatorConcurrencyTest, ThreadsShareTheCache) {
  HostAllocator allocator;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] {
      for (int i = 0; i < 2000; ++i) {
        size_t size = static_cast<size_t>(64) << ((i + t) % 12);
        char* ptr = static_cast<char*>(allocator.allocate(size));
        ptr[0] = static_cast<char>(t);
        ptr[size - 1] = static_cast<char>(t);
        EXPECT_TRUE(allocator.isPinned(ptr + size / 2));
        allocator.free(ptr);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(allocator.stats().allocations.current, 0);
  allocator.emptyCache();
  EXPECT_EQ(allocator.stats().reserved_bytes.current, 0);
}

// Committed host memory against a simulated small host: the cgroup files come
// from NPUSIM_TESTING_CGROUP_DIR, so nothing here allocates much memory.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <string>

#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Error.h"
#include "runtime/HostAllocator.h"
#include "runtime/HostMemory.h"
#include "runtime/HostMemoryBudget.h"
#include "TestSupport.h"

using namespace npusim::runtime;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// A cgroup of `maxBytes` with `currentBytes` in use, for as long as it lives.
// What this process had committed already (another test's leftovers when the
// tests share one process) counts as used in the group, so that the group
// gives exactly `maxBytes` in all.
class FakeCgroup {
 public:
  FakeCgroup(uint64_t maxBytes, uint64_t currentBytes) : alreadyCommitted_(HostMemoryBudget::instance().committed()) {
    write(maxBytes, currentBytes);
    ::setenv("NPUSIM_TESTING_CGROUP_DIR", directory_.path().c_str(), 1);
    HostMemoryBudget::instance().resetForTesting();
  }
  ~FakeCgroup() {
    ::unsetenv("NPUSIM_TESTING_CGROUP_DIR");
    HostMemoryBudget::instance().resetForTesting();
  }
  void write(uint64_t maxBytes, uint64_t currentBytes) {
    std::ofstream(directory_ / "memory.max") << maxBytes << "\n";
    std::ofstream(directory_ / "memory.current") << currentBytes + alreadyCommitted_ << "\n";
  }
  uint64_t alreadyCommitted() const { return alreadyCommitted_; }

 private:
  const uint64_t alreadyCommitted_;
  npusim::runtime::testing::TemporaryDirectory directory_;
};

class ImmediateStreams : public StreamUseTracker {
 public:
  uint64_t markStreamUse(StreamId) override { return 0; }
  bool isComplete(uint64_t) override { return true; }
  void synchronizeDevice() override {}
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(HostMemoryBudgetTest, ReadsTheCgroupFromTheTestingDirectory) {
  FakeCgroup cgroup(3 * kGiB, kGiB);
  const HostMemoryLimit limit = hostMemoryLimit();
  EXPECT_EQ(limit.cgroupMaxBytes, 3 * kGiB);
  EXPECT_EQ(limit.cgroupRemainingBytes, 2 * kGiB - cgroup.alreadyCommitted());
  EXPECT_LE(limit.availableBytes, 2 * kGiB);
  EXPECT_TRUE(contains(describeHostMemoryLimit(limit), "memory.max 3.00 GiB"));
}

TEST(HostMemoryBudgetTest, RefusesWhatWouldPassTheLimitLessTheMargin) {
  FakeCgroup cgroup(kGiB, 0);  // usable: 1 GiB less a 64 MiB margin
  auto& budget = HostMemoryBudget::instance();
  const uint64_t before = budget.committed();
  EXPECT_EQ(HostMemoryBudget::safetyMargin(kGiB), 64 * kMiB);
  EXPECT_FALSE(budget.commit(600 * kMiB));
  const auto refusal = budget.commit(400 * kMiB);
  ASSERT_TRUE(refusal);
  EXPECT_TRUE(contains(*refusal, "npusim holds " + formatMemorySize(before + 600 * kMiB))) << *refusal;
  EXPECT_TRUE(contains(*refusal, "the host can give 1024.00 MiB")) << *refusal;
  EXPECT_TRUE(contains(*refusal, "memory.max 1.00 GiB")) << *refusal;
  EXPECT_TRUE(contains(*refusal, "MemAvailable")) << *refusal;
  EXPECT_EQ(budget.committed(), before + 600 * kMiB);
  const uint64_t upToTheMargin = 360 * kMiB - before;
  EXPECT_FALSE(budget.commit(upToTheMargin));
  EXPECT_TRUE(budget.commit(upToTheMargin + 1));
  budget.release(upToTheMargin);
  budget.release(600 * kMiB);
  EXPECT_FALSE(budget.commit(900 * kMiB));
  budget.release(900 * kMiB);
  EXPECT_EQ(budget.committed(), before);
}

TEST(HostMemoryBudgetTest, FollowsMemoryOthersTakeAfterTheStart) {
  FakeCgroup cgroup(kGiB, 0);
  auto& budget = HostMemoryBudget::instance();
  EXPECT_FALSE(budget.commit(100 * kMiB));
  cgroup.write(kGiB, 900 * kMiB);  // another process of the group took 800 MiB more
  EXPECT_TRUE(budget.commit(200 * kMiB));
  budget.release(100 * kMiB);
}

TEST(HostMemoryBudgetTest, SmallBlocksSkipTheReadingUntilTheyAddUp) {
  FakeCgroup cgroup(kGiB, 0);
  auto& budget = HostMemoryBudget::instance();
  EXPECT_FALSE(budget.commit(100 * kMiB));  // first reading
  cgroup.write(kGiB, 2 * kGiB);             // nothing left: any reading refuses
  uint64_t small = 0;
  while (small + 512 * 1024 < HostMemoryBudget::kUncheckedAllowance) {
    ASSERT_FALSE(budget.commit(512 * 1024)) << "small blocks must not read the host each time";
    small += 512 * 1024;
  }
  EXPECT_TRUE(budget.commit(512 * 1024));  // the allowance is used up: read, refused
  budget.release(small);
  budget.release(100 * kMiB);
}

TEST(HostMemoryBudgetTest, EstimateOnlyMemoryCommitsNothing) {
  FakeCgroup cgroup(kGiB, 0);
  const uint64_t before = HostMemoryBudget::instance().committed();
  DeviceMemory memory(0, 64 * kGiB);
  memory.setOvercommit(true);
  void* ptr = memory.allocate(8 * kGiB);
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before);
  memory.setOvercommit(false);  // freed after the mode ends: still nothing to release
  memory.free(ptr, 8 * kGiB);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before);
  void* real = memory.allocate(100 * kMiB);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before + 100 * kMiB);
  memory.free(real, 100 * kMiB);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before);
}

TEST(HostMemoryBudgetTest, AllocatorFreesItsCacheThenGrantsUncommittedPagesAsTheChipWould) {
  FakeCgroup cgroup(kGiB, 0);
  DeviceMemory memory(0, 4 * kGiB);  // the chip has room; the host does not
  ImmediateStreams streams;
  CachingAllocator allocator(0, memory, streams, AllocatorConfig());
  const size_t pad = CachingAllocator::kPadBytes;

  void* first = allocator.allocate(500 * kMiB - pad, 0);
  allocator.free(first);  // cached: 500 MiB still committed
  void* second = allocator.allocate(700 * kMiB - pad, 0);  // refused, cache freed, retried
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(allocator.stats().num_alloc_retries, 1);
  EXPECT_EQ(allocator.reservedBytes(), 700 * kMiB);

  // The host cannot back 300 MiB more, but the chip has room: the segment is granted with its
  // pages committed as they are written, so the host budget does not count it yet.
  const uint64_t committed = HostMemoryBudget::instance().committed();
  void* third = allocator.allocate(300 * kMiB - pad, 0);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(allocator.reservedBytes(), 1000 * kMiB);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), committed);
  EXPECT_EQ(allocator.stats().num_ooms, 0);

  // Beyond the chip's own capacity it is the chip's out-of-memory error, and the allocator stays usable.
  try {
    allocator.allocate(4 * kGiB, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    const std::string text = error.what();
    EXPECT_TRUE(contains(text, "NPU out of memory. Tried to allocate 4.00 GiB")) << text;
    EXPECT_TRUE(contains(text, "4.00 GiB total capacity")) << text;
  }
  EXPECT_EQ(allocator.stats().num_ooms, 1);
  allocator.free(third);
  allocator.free(second);
}

TEST(HostMemoryBudgetTest, PinnedHostMemoryCountsToo) {
  FakeCgroup cgroup(kGiB, 0);
  HostAllocator pinned;
  const uint64_t before = HostMemoryBudget::instance().committed();
  void* block = pinned.allocate(512 * kMiB);
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before + 512 * kMiB);  // a power of two: no rounding
  try {
    pinned.allocate(512 * kMiB);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtMemoryAllocation);
    EXPECT_TRUE(contains(error.what(), "memory.max 1.00 GiB")) << error.what();
  }
  pinned.free(block);
  pinned.emptyCache();
  EXPECT_EQ(HostMemoryBudget::instance().committed(), before);
}

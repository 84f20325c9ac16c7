#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "runtime/AllocationHistory.h"
#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Error.h"

using namespace npusim::runtime;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

class ImmediateTracker : public StreamUseTracker {
 public:
  uint64_t markStreamUse(StreamId) override { return next_++; }
  bool isComplete(uint64_t marker) override { return marker < completedBelow_; }
  void synchronizeDevice() override { completedBelow_ = next_; }

 private:
  uint64_t next_ = 0;
  uint64_t completedBelow_ = 0;
};

// A stack is a number: the test can tell which call captured it.
struct NumberedStack : StackContext {
  explicit NumberedStack(int n) : number(n) {}
  int number;
};

struct Fixture {
  explicit Fixture(size_t capacity = 64 * kMiB) : memory(0, capacity), allocator(0, memory, tracker, AllocatorConfig()) {}
  StackRecorder counter() {
    return [this] { return std::make_shared<NumberedStack>(++captures); };
  }
  DeviceMemory memory;
  ImmediateTracker tracker;
  CachingAllocator allocator;
  int captures = 0;
};

int numberOf(const std::shared_ptr<StackContext>& stack) {
  auto* numbered = dynamic_cast<NumberedStack*>(stack.get());
  return numbered == nullptr ? 0 : numbered->number;
}

std::vector<TraceAction> actionsOf(const std::vector<TraceEntry>& entries) {
  std::vector<TraceAction> actions;
  for (const auto& entry : entries) actions.push_back(entry.action);
  return actions;
}

}  // namespace

TEST(AllocationHistoryTest, OffByDefaultAndCapturesNothing) {
  Fixture f;
  EXPECT_FALSE(f.allocator.isHistoryEnabled());
  void* p = f.allocator.allocate(1000, 0);
  f.allocator.free(p);
  EXPECT_TRUE(f.allocator.trace().empty());
  EXPECT_EQ(f.captures, 0);
}

TEST(AllocationHistoryTest, RecordsAllocFreeAndSegmentsInOrder) {
  Fixture f;
  f.allocator.recordHistory(true, f.counter(), 1000, RecordContext::kAll);
  EXPECT_TRUE(f.allocator.isHistoryEnabled());
  void* p = f.allocator.allocate(1000, 0);
  f.allocator.free(p);
  f.allocator.emptyCache();
  const auto entries = f.allocator.trace();
  EXPECT_EQ(actionsOf(entries),
            (std::vector<TraceAction>{TraceAction::kSegmentAlloc, TraceAction::kAlloc, TraceAction::kFreeRequested,
                                      TraceAction::kFreeCompleted, TraceAction::kSegmentFree}));
  EXPECT_EQ(entries[1].addr, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(entries[1].size, 1000u);
  EXPECT_EQ(entries[0].size, 2 * kMiB);
  EXPECT_EQ(numberOf(entries[1].stack), 1);  // the allocation's stack
  EXPECT_EQ(numberOf(entries[2].stack), 2);  // context "all": the free has its own
  EXPECT_EQ(numberOf(entries[4].stack), 1);  // the segment keeps the stack that carved it
  EXPECT_GT(entries[0].timeUs, 0);
}

TEST(AllocationHistoryTest, StateContextKeepsStacksOnBlocksOnly) {
  Fixture f;
  f.allocator.recordHistory(true, f.counter(), 1000, RecordContext::kState);
  void* p = f.allocator.allocate(1000, 0);
  void* q = f.allocator.allocate(3000, 0);
  f.allocator.free(q);
  for (const auto& entry : f.allocator.trace()) EXPECT_EQ(entry.stack, nullptr);
  const auto segments = f.allocator.snapshot();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_GE(segments[0].blocks.size(), 2u);
  EXPECT_EQ(numberOf(segments[0].blocks[0].stack), 1);
  EXPECT_EQ(segments[0].blocks[1].stack, nullptr);  // freed: no stack
  EXPECT_EQ(f.captures, 2);                          // kAll would also capture the free
  EXPECT_EQ(f.allocator.trace().back().action, TraceAction::kSnapshot);
  f.allocator.free(p);
}

TEST(AllocationHistoryTest, RingKeepsTheNewestMaxEntries) {
  Fixture f;
  f.allocator.recordHistory(true, f.counter(), 3, RecordContext::kAlloc);
  void* p = f.allocator.allocate(1000, 0);  // segment_alloc, alloc
  f.allocator.free(p);                      // free_requested, free_completed
  void* q = f.allocator.allocate(1000, 0);  // alloc (cached)
  const auto entries = f.allocator.trace();
  EXPECT_EQ(actionsOf(entries), (std::vector<TraceAction>{TraceAction::kFreeRequested, TraceAction::kFreeCompleted,
                                                          TraceAction::kAlloc}));
  f.allocator.free(q);
}

TEST(AllocationHistoryTest, DisablingClearsAndStopsRecording) {
  Fixture f;
  f.allocator.recordHistory(true, f.counter(), 100, RecordContext::kAll);
  void* p = f.allocator.allocate(1000, 0);
  f.allocator.recordHistory(false, nullptr, 100, RecordContext::kNever);
  EXPECT_FALSE(f.allocator.isHistoryEnabled());
  f.allocator.free(p);
  EXPECT_TRUE(f.allocator.trace().empty());
  const int captured = f.captures;
  void* q = f.allocator.allocate(1000, 0);
  f.allocator.free(q);
  EXPECT_EQ(f.captures, captured);
}

TEST(AllocationHistoryTest, OutOfMemoryAddsAnOomEntry) {
  Fixture f(8 * kMiB);
  f.allocator.recordHistory(true, f.counter(), 100, RecordContext::kAll);
  EXPECT_THROW(f.allocator.allocate(32 * kMiB, 0), OutOfMemoryError);
  const auto entries = f.allocator.trace();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.back().action, TraceAction::kOom);
  EXPECT_EQ(entries.back().size, CachingAllocator::roundSize(32 * kMiB, AllocatorConfig()));
  EXPECT_EQ(entries.back().addr, f.memory.freeBytes());  // device_free
  EXPECT_STREQ(traceActionName(entries.back().action), "oom");
}

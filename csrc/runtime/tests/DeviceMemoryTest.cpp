#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/DeviceMemory.h"
#include "runtime/HostMemory.h"
#include "runtime/Error.h"

using namespace npusim::runtime;

namespace {
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
}  // namespace

TEST(DeviceMemoryTest, AllocatesAlignedWritableMemoryAndAccountsForIt) {
  DeviceMemory memory(2, 64 * kMiB);
  EXPECT_EQ(memory.device(), 2);
  EXPECT_EQ(memory.capacity(), 64 * kMiB);
  void* ptr = memory.allocate(3 * kMiB);
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 512, 0u);
  std::memset(ptr, 0xab, 3 * kMiB);
  EXPECT_EQ(static_cast<unsigned char*>(ptr)[3 * kMiB - 1], 0xab);
  EXPECT_EQ(memory.used(), 3 * kMiB);
  EXPECT_EQ(memory.freeBytes(), 61 * kMiB);
  memory.free(ptr, 3 * kMiB);
  EXPECT_EQ(memory.used(), 0u);
}

TEST(DeviceMemoryTest, ReturnsNullWhenCapacityWouldBeExceeded) {
  DeviceMemory memory(0, 10 * kMiB);
  void* first = memory.allocate(8 * kMiB);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(memory.allocate(3 * kMiB), nullptr);
  EXPECT_EQ(memory.used(), 8 * kMiB);
  void* second = memory.allocate(2 * kMiB);  // exactly full
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(memory.freeBytes(), 0u);
  EXPECT_EQ(memory.allocate(1), nullptr);
  EXPECT_EQ(memory.allocate(0), nullptr);
  EXPECT_EQ(memory.allocate(SIZE_MAX), nullptr);
  memory.free(first, 8 * kMiB);
  memory.free(second, 2 * kMiB);
}

TEST(DeviceMemoryTest, LargeSimulatedHbmCommitsOnlyTouchedPages) {
  // 48 GiB of HBM: only the touched pages count, but a block the host could
  // not back if it were written is refused (kernel OOM kill otherwise).
  DeviceMemory memory(0, 64 * kGiB);
  if (hostMemoryLimit().availableBytes < 48 * kGiB) {
    try {
      memory.allocate(48 * kGiB);
      FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& error) {
      EXPECT_EQ(error.code(), ErrorCode::kRtMemoryAllocation);
      EXPECT_NE(error.detail().find("NPUSIM_HBM_SIZE"), std::string::npos);
    }
    EXPECT_EQ(memory.used(), 0u);
    // Estimate-only mode writes nothing: the reservation is allowed.
    memory.setOvercommit(true);
  }
  void* ptr = memory.allocate(48 * kGiB);
  ASSERT_NE(ptr, nullptr);
  auto* bytes = static_cast<unsigned char*>(ptr);
  for (size_t offset = 0; offset < 48 * kGiB; offset += 4 * kGiB) bytes[offset] = 1;
  bytes[48 * kGiB - 1] = 2;
  EXPECT_EQ(bytes[48 * kGiB - 1], 2);
  EXPECT_EQ(memory.used(), 48 * kGiB);
  memory.free(ptr, 48 * kGiB);
  EXPECT_EQ(memory.used(), 0u);
}

TEST(DeviceMemoryTest, BadFreeThrowsAndChangesNothing) {
  DeviceMemory memory(1, 16 * kMiB);
  void* ptr = memory.allocate(kMiB);
  int onStack = 0;
  try {
    memory.free(&onStack, kMiB);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kRtMemoryFree);
    EXPECT_EQ(error.call(), "aclrtFree");
  }
  EXPECT_THROW(memory.free(ptr, 2 * kMiB), RuntimeError);  // wrong size
  EXPECT_EQ(memory.used(), kMiB);
  memory.free(nullptr, 0);
  memory.free(ptr, kMiB);
  EXPECT_THROW(memory.free(ptr, kMiB), RuntimeError);  // double free
  EXPECT_EQ(memory.used(), 0u);
}

TEST(DeviceMemoryTest, ConcurrentAllocationsNeverExceedCapacity) {
  DeviceMemory memory(0, 64 * kMiB);
  std::atomic<size_t> granted{0};
  std::vector<std::thread> threads;
  std::vector<std::vector<void*>> perThread(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (void* ptr = memory.allocate(kMiB)) {
        perThread[t].push_back(ptr);
        granted += kMiB;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), 64 * kMiB);
  EXPECT_EQ(memory.used(), 64 * kMiB);
  for (auto& pointers : perThread) {
    for (void* ptr : pointers) memory.free(ptr, kMiB);
  }
  EXPECT_EQ(memory.used(), 0u);
}

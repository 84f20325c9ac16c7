// Cost of an allocate + free pair through the npusim CachingAllocator against
// glibc malloc + free, in the same run, touching the memory in both (one byte
// per 4 KiB page, as a kernel writing its output would). Prints the median
// nanoseconds per pair over many batches and the ratio to malloc, for a mixed
// set of small sizes (<= 1 MiB) and of large sizes (>= 2 MiB).
//
//   npusim_allocator_bench [--quick]
//
// Targets: small <= 3x malloc, large faster than malloc.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/AllocatorConfig.h"
#include "runtime/CachingAllocator.h"
#include "runtime/DeviceMemory.h"

using namespace npusim::runtime;

namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kPage = 4096;

class NoStreams : public StreamUseTracker {
 public:
  uint64_t markStreamUse(StreamId) override { return 0; }
  bool isComplete(uint64_t) override { return true; }
  void synchronizeDevice() override {}
};

inline void touch(void* ptr, size_t size) {
  auto* bytes = static_cast<volatile char*>(ptr);
  for (size_t offset = 0; offset < size; offset += kPage) bytes[offset] = 1;
  bytes[size - 1] = 1;
  asm volatile("" : : "r"(ptr) : "memory");
}

template <typename Pair>
double medianNsPerPair(const std::vector<size_t>& sizes, int batches, int pairsPerBatch, Pair&& pair) {
  // Warm up: every size once, twice.
  for (int i = 0; i < 2; ++i) {
    for (size_t size : sizes) pair(size);
  }
  std::vector<double> perPair;
  perPair.reserve(static_cast<size_t>(batches));
  for (int batch = 0; batch < batches; ++batch) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < pairsPerBatch; ++i) pair(sizes[static_cast<size_t>(i) % sizes.size()]);
    auto stop = std::chrono::steady_clock::now();
    perPair.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / pairsPerBatch);
  }
  std::nth_element(perPair.begin(), perPair.begin() + static_cast<std::ptrdiff_t>(perPair.size() / 2), perPair.end());
  return perPair[perPair.size() / 2];
}

struct Result {
  double allocatorNs;
  double mallocNs;
};

Result measure(const std::vector<size_t>& sizes, int batches, int pairsPerBatch) {
  DeviceMemory memory(0, 64 * kGiB);
  NoStreams tracker;
  CachingAllocator allocator(0, memory, tracker, AllocatorConfig());
  double allocatorNs = medianNsPerPair(sizes, batches, pairsPerBatch, [&](size_t size) {
    void* ptr = allocator.allocate(size, 0);
    touch(ptr, size);
    allocator.free(ptr);
  });
  double mallocNs = medianNsPerPair(sizes, batches, pairsPerBatch, [&](size_t size) {
    void* ptr = std::malloc(size);
    if (ptr == nullptr) std::abort();
    touch(ptr, size);
    std::free(ptr);
  });
  return {allocatorNs, mallocNs};
}

void report(const char* name, const std::vector<size_t>& sizes, const Result& result, double target,
            bool targetIsCeiling) {
  std::printf("%-6s sizes:", name);
  for (size_t size : sizes) {
    if (size >= kMiB && size % kMiB == 0) {
      std::printf(" %zuM", size / kMiB);
    } else if (size >= kKiB) {
      std::printf(" %.1fK", static_cast<double>(size) / kKiB);
    } else {
      std::printf(" %zu", size);
    }
  }
  double ratio = result.allocatorNs / result.mallocNs;
  bool ok = targetIsCeiling ? ratio <= target : ratio < target;
  std::printf("\n  CachingAllocator %10.1f ns/pair   malloc %10.1f ns/pair   ratio %.3f  (target %s %.1f: %s)\n",
              result.allocatorNs, result.mallocNs, ratio, targetIsCeiling ? "<=" : "<", target,
              ok ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::vector<size_t> small = {64, 512, 3000, 16 * kKiB, 64 * kKiB, 200 * kKiB, 512 * kKiB, kMiB - 64};
  const std::vector<size_t> large = {2 * kMiB, 4 * kMiB, 6 * kMiB, 12 * kMiB, 32 * kMiB, 64 * kMiB};

  std::printf("npusim allocator benchmark: median cost of allocate + touch (1 byte / 4 KiB) + free\n");
  Result smallResult = measure(small, quick ? 9 : 41, quick ? 400 : 2000);
  report("small", small, smallResult, 3.0, true);
  Result largeResult = measure(large, quick ? 5 : 15, quick ? 12 : 24);
  report("large", large, largeResult, 1.0, false);
  return 0;
}

// price() is called for every operator: it must not allocate.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "TestTensors.h"
#include "perf/CostModel.h"
#include "runtime/ChipSpec.h"

#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// Counting replacements of the global allocation functions (this test binary only).
void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace npusim;
using namespace npusim::perf;
using namespace npusim::perf::testing;

TEST(HotPath, PriceAllocatesNothing) {
  const CostModel model(runtime::findChip("Ascend910B2"));
  const Operands matrices{tensor({64, 256, 28, 28}), tensor({64, 128, 56, 56}), tensor({256, 128, 3, 3}),
                          tensor({256})};
  const Operands results{tensor({64, 128, 56, 56}), tensor({256, 128, 3, 3}), tensor({256})};
  const OperatorKind kinds[] = {OperatorKind::kMatmul,        OperatorKind::kLinear,
                                OperatorKind::kConvolution,   OperatorKind::kConvolutionBackward,
                                OperatorKind::kAttention,     OperatorKind::kNormalization,
                                OperatorKind::kSort,          OperatorKind::kOptimizerFused,
                                OperatorKind::kDataMovement,  OperatorKind::kIndexing};
  const int64_t args[] = {0, 1, 3};
  counting = true;
  uint64_t sum = 0;
  for (OperatorKind kind : kinds) {
    for (Placement placement : {Placement::kAiCore, Placement::kAiCpu, Placement::kCpuFallback}) {
      sum += model.price(kind, matrices.data(), matrices.size(), results.data(), results.size(), placement,
                         CostOptions{}, args, 3)
                 .deviceNs;
    }
  }
  sum += model.hostToDevice(1 << 20, true) + model.deviceToHost(1 << 20) + model.hostDispatchNs(1);
  counting = false;
  EXPECT_GT(sum, 0u);
  EXPECT_EQ(allocations.load(), 0);
}

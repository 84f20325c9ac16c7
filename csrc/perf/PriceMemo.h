// The prices of recent operator calls, so that a shape priced once is not
// priced again: a training loop repeats the same calls step after step, and
// for a small kernel pricing costs more host time than the kernel itself.
//
// price() is a pure function of its arguments (CostModel is immutable once
// built), so a remembered price is exactly the price. A memo is not shared
// between threads: give each thread its own (the backend keeps one per thread).
#pragma once

#include <array>
#include <cstdint>

#include "perf/CostModel.h"

namespace npusim::perf {

class PriceMemo {
 public:
  // model.price(...) for these arguments, from the memo when an earlier call
  // with equal arguments (every size, stride, dtype and L2 flag, the
  // placement, options and integer arguments) is still remembered. Calls too
  // large to remember (many or high-rank operands) are priced directly.
  Cost price(const CostModel& model, OperatorKind kind, const TensorDesc* inputs, int inputCount,
             const TensorDesc* outputs, int outputCount, Placement placement, const CostOptions& options,
             const int64_t* intArgs = nullptr, int intArgCount = 0) noexcept;

  uint64_t hits() const noexcept { return hits_; }
  uint64_t misses() const noexcept { return misses_; }

 private:
  static constexpr int kKeyWords = 40;
  static constexpr int kEntryBits = 7;
  struct Entry {
    const CostModel* model = nullptr;
    int length = 0;
    int64_t key[kKeyWords];
    Cost cost;
  };
  std::array<Entry, size_t{1} << kEntryBits> entries_{};
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace npusim::perf

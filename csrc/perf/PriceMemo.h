// The prices of recent operator calls, so that a shape priced once is not
// priced again: a training loop repeats the same calls step after step, and
// for a small kernel pricing costs more host time than the kernel itself.
//
// price() is a pure function of its arguments (CostModel is immutable once
// built), so a remembered price is exactly the price. A memo is not shared
// between threads: give each thread its own (the backend keeps one per thread).
//
// Two ways in: price() takes TensorDescs; a caller that holds the operands in
// another form (the backend's executor, with TensorImpls) writes the key
// itself with the price_key writers below, asks find(), and makes the
// descriptions only when the memo misses (then remember()). Both write the
// same key for the same call.
#pragma once

#include <array>
#include <cstdint>

#include "perf/CostModel.h"

namespace npusim::perf {

class PriceMemo {
 public:
  static constexpr int kKeyWords = 40;

  // A call's key: its words, how many, their hash.
  struct Key {
    int64_t words[kKeyWords];
    int length = 0;
    uint64_t hash = 0;
  };

  // model.price(...) for these arguments, from the memo when an earlier call
  // with equal arguments (every size, stride, dtype and L2 flag, the
  // placement, options and integer arguments) is still remembered. Calls too
  // large to remember (many or high-rank operands) are priced directly.
  Cost price(const CostModel& model, OperatorKind kind, const TensorDesc* inputs, int inputCount,
             const TensorDesc* outputs, int outputCount, Placement placement, const CostOptions& options,
             const int64_t* intArgs = nullptr, int intArgCount = 0) noexcept;

  // The remembered price of `key` (written with the price_key writers), or
  // nullptr; counts a hit or a miss.
  const Cost* find(const CostModel& model, const Key& key) noexcept;
  // Remembers `cost` as the price of `key` (after find() missed).
  void remember(const CostModel& model, const Key& key, const Cost& cost) noexcept;
  // A call too large for a key, priced directly: counted as a miss.
  void countUnkeyed() noexcept { ++misses_; }

  uint64_t hits() const noexcept { return hits_; }
  uint64_t misses() const noexcept { return misses_; }

 private:
  static constexpr int kEntryBits = 7;
  struct Entry {
    const CostModel* model = nullptr;
    int length = 0;
    int64_t key[kKeyWords];
    Cost cost;
  };
  Entry& slotOf(const Key& key) noexcept { return entries_[(key.hash ^ (key.hash >> 29)) >> (64 - kEntryBits)]; }

  std::array<Entry, size_t{1} << kEntryBits> entries_{};
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

// Writers of a PriceMemo::Key. The cursor and the hash are locals of the
// caller (these are always inlined): a struct's members would be reloaded
// after every word written, since an int64_t store may alias them. A key is:
// one header word, then per input and per output one word (rank, dtype, L2
// flag, whether strides follow) and its sizes and strides, then the integer
// arguments.
namespace price_key {

// Words an operand takes in the key.
constexpr int operandWords(int rank, bool hasStrides) noexcept { return 1 + (rank > 0 ? rank : 0) * (hasStrides ? 2 : 1); }

[[gnu::always_inline]] inline void put(int64_t*& out, uint64_t& hash, int64_t word) noexcept {
  *out++ = word;
  hash = (hash + uint64_t(word)) * 0x9E3779B97F4A7C15ull;
}

[[gnu::always_inline]] inline void putHeader(int64_t*& out, uint64_t& hash, OperatorKind kind, Placement placement,
                                             const CostOptions& options, int inputCount, int outputCount,
                                             int intArgCount) noexcept {
  put(out, hash,
      int64_t(kind) | int64_t(placement) << 8 | int64_t(options.allowHf32Matmul) << 12 |
          int64_t(options.allowHf32Conv) << 13 | int64_t(inputCount) << 16 | int64_t(outputCount) << 32 |
          int64_t(intArgCount) << 48);
}

// An operand: `rank` -1 for none (then sizes and strides are not read).
[[gnu::always_inline]] inline void putOperand(int64_t*& out, uint64_t& hash, int rank, DType dtype, bool l2Resident,
                                              const int64_t* sizes, const int64_t* strides) noexcept {
  put(out, hash,
      int64_t(rank + 1) | int64_t(dtype) << 8 | int64_t(l2Resident) << 16 | int64_t(strides != nullptr) << 17);
  for (int k = 0; k < rank; ++k) put(out, hash, sizes[k]);
  if (strides != nullptr) {
    for (int k = 0; k < rank; ++k) put(out, hash, strides[k]);
  }
}

}  // namespace price_key

}  // namespace npusim::perf

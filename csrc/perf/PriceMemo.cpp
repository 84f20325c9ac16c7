#include "perf/PriceMemo.h"

#include <algorithm>

namespace npusim::perf {
namespace {

// Words a description takes in the key: a header, the sizes, the strides if given.
int descWords(const TensorDesc* descs, int count) noexcept {
  int words = 0;
  for (int i = 0; i < count; ++i) words += 1 + std::max(0, descs[i].rank) * (descs[i].strides != nullptr ? 2 : 1);
  return words;
}

// Writes the key and hashes it in the same pass (plain loops: a key is a
// few words, where library copies would cost a call each). The cursor and the
// hash are locals of the caller (always inlined): a struct's members would be
// reloaded after every word written, since an int64_t store may alias them.
[[gnu::always_inline]] inline void put(int64_t*& out, uint64_t& hash, int64_t word) noexcept {
  *out++ = word;
  hash = (hash + uint64_t(word)) * 0x9E3779B97F4A7C15ull;
}

[[gnu::always_inline]] inline void putDescs(int64_t*& out, uint64_t& hash, const TensorDesc* descs,
                                            int count) noexcept {
  for (int i = 0; i < count; ++i) {
    const TensorDesc& d = descs[i];
    put(out, hash,
        int64_t(d.rank + 1) | int64_t(d.dtype) << 8 | int64_t(d.l2Resident) << 16 |
            int64_t(d.strides != nullptr) << 17);
    for (int k = 0; k < d.rank; ++k) put(out, hash, d.sizes[k]);
    if (d.strides != nullptr) {
      for (int k = 0; k < d.rank; ++k) put(out, hash, d.strides[k]);
    }
  }
}

}  // namespace

Cost PriceMemo::price(const CostModel& model, OperatorKind kind, const TensorDesc* inputs, int inputCount,
                      const TensorDesc* outputs, int outputCount, Placement placement, const CostOptions& options,
                      const int64_t* intArgs, int intArgCount) noexcept {
  inputCount = inputs != nullptr ? std::max(0, inputCount) : 0;
  outputCount = outputs != nullptr ? std::max(0, outputCount) : 0;
  intArgCount = intArgs != nullptr ? std::max(0, intArgCount) : 0;
  const int length = 1 + descWords(inputs, inputCount) + descWords(outputs, outputCount) + intArgCount;
  if (length > kKeyWords) {
    ++misses_;
    return model.price(kind, inputs, inputCount, outputs, outputCount, placement, options, intArgs, intArgCount);
  }
  int64_t key[kKeyWords];
  int64_t* out = key;
  uint64_t hash = 0;
  put(out, hash,
      int64_t(kind) | int64_t(placement) << 8 | int64_t(options.allowHf32Matmul) << 12 |
          int64_t(options.allowHf32Conv) << 13 | int64_t(inputCount) << 16 | int64_t(outputCount) << 32 |
          int64_t(intArgCount) << 48);
  putDescs(out, hash, inputs, inputCount);
  putDescs(out, hash, outputs, outputCount);
  for (int i = 0; i < intArgCount; ++i) put(out, hash, intArgs[i]);
  Entry& entry = entries_[(hash ^ (hash >> 29)) >> (64 - kEntryBits)];
  if (entry.model == &model && entry.length == length) {
    int i = 0;
    while (i < length && entry.key[i] == key[i]) ++i;
    if (i == length) {
      ++hits_;
      return entry.cost;
    }
  }
  ++misses_;
  entry.cost = model.price(kind, inputs, inputCount, outputs, outputCount, placement, options, intArgs, intArgCount);
  entry.model = &model;
  entry.length = length;
  for (int i = 0; i < length; ++i) entry.key[i] = key[i];
  return entry.cost;
}

}  // namespace npusim::perf

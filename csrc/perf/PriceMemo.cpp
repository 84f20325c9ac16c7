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

int64_t* putDescs(int64_t* out, const TensorDesc* descs, int count) noexcept {
  for (int i = 0; i < count; ++i) {
    const TensorDesc& d = descs[i];
    *out++ = int64_t(d.rank + 1) | int64_t(d.dtype) << 8 | int64_t(d.l2Resident) << 16 |
             int64_t(d.strides != nullptr) << 17;
    if (d.rank > 0) {
      out = std::copy(d.sizes, d.sizes + d.rank, out);
      if (d.strides != nullptr) out = std::copy(d.strides, d.strides + d.rank, out);
    }
  }
  return out;
}

uint64_t hashOf(const int64_t* key, int length) noexcept {
  uint64_t h = 0;
  for (int i = 0; i < length; ++i) h = (h + uint64_t(key[i])) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
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
  key[0] = int64_t(kind) | int64_t(placement) << 8 | int64_t(options.allowHf32Matmul) << 12 |
           int64_t(options.allowHf32Conv) << 13 | int64_t(inputCount) << 16 | int64_t(outputCount) << 32 |
           int64_t(intArgCount) << 48;
  int64_t* end = putDescs(putDescs(key + 1, inputs, inputCount), outputs, outputCount);
  if (intArgCount > 0) std::copy(intArgs, intArgs + intArgCount, end);
  Entry& entry = entries_[hashOf(key, length) >> (64 - kEntryBits)];
  if (entry.model == &model && entry.length == length && std::equal(key, key + length, entry.key)) {
    ++hits_;
    return entry.cost;
  }
  ++misses_;
  entry.cost = model.price(kind, inputs, inputCount, outputs, outputCount, placement, options, intArgs, intArgCount);
  entry.model = &model;
  entry.length = length;
  std::copy(key, key + length, entry.key);
  return entry.cost;
}

}  // namespace npusim::perf

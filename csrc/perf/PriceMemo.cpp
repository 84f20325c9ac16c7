#include "perf/PriceMemo.h"

#include <algorithm>

namespace npusim::perf {
namespace {

// Words the descriptions take in the key.
int descWords(const TensorDesc* descs, int count) noexcept {
  int words = 0;
  for (int i = 0; i < count; ++i) words += price_key::operandWords(descs[i].rank, descs[i].strides != nullptr);
  return words;
}

[[gnu::always_inline]] inline void putDescs(int64_t*& out, uint64_t& hash, const TensorDesc* descs,
                                            int count) noexcept {
  for (int i = 0; i < count; ++i) {
    const TensorDesc& d = descs[i];
    price_key::putOperand(out, hash, d.rank, d.dtype, d.l2Resident, d.sizes, d.strides);
  }
}

}  // namespace

const Cost* PriceMemo::find(const CostModel& model, const Key& key) noexcept {
  const Entry& entry = slotOf(key);
  if (entry.model == &model && entry.length == key.length) {
    int i = 0;
    while (i < key.length && entry.key[i] == key.words[i]) ++i;
    if (i == key.length) {
      ++hits_;
      return &entry.cost;
    }
  }
  ++misses_;
  return nullptr;
}

void PriceMemo::remember(const CostModel& model, const Key& key, const Cost& cost) noexcept {
  Entry& entry = slotOf(key);
  entry.cost = cost;
  entry.model = &model;
  entry.length = key.length;
  for (int i = 0; i < key.length; ++i) entry.key[i] = key.words[i];
}

Cost PriceMemo::price(const CostModel& model, OperatorKind kind, const TensorDesc* inputs, int inputCount,
                      const TensorDesc* outputs, int outputCount, Placement placement, const CostOptions& options,
                      const int64_t* intArgs, int intArgCount) noexcept {
  inputCount = inputs != nullptr ? std::max(0, inputCount) : 0;
  outputCount = outputs != nullptr ? std::max(0, outputCount) : 0;
  intArgCount = intArgs != nullptr ? std::max(0, intArgCount) : 0;
  const int length = 1 + descWords(inputs, inputCount) + descWords(outputs, outputCount) + intArgCount;
  if (length > kKeyWords) {
    countUnkeyed();
    return model.price(kind, inputs, inputCount, outputs, outputCount, placement, options, intArgs, intArgCount);
  }
  Key key;
  int64_t* out = key.words;
  uint64_t hash = 0;
  price_key::putHeader(out, hash, kind, placement, options, inputCount, outputCount, intArgCount);
  putDescs(out, hash, inputs, inputCount);
  putDescs(out, hash, outputs, outputCount);
  for (int i = 0; i < intArgCount; ++i) price_key::put(out, hash, intArgs[i]);
  key.length = length;
  key.hash = hash;
  if (const Cost* remembered = find(model, key)) return *remembered;
  const Cost cost = model.price(kind, inputs, inputCount, outputs, outputCount, placement, options, intArgs, intArgCount);
  remember(model, key, cost);
  return cost;
}

}  // namespace npusim::perf

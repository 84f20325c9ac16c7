// Owning tensor descriptions for the tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "perf/TensorDesc.h"

namespace npusim::perf::testing {

struct OwnedTensor {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // empty: contiguous
  DType dtype = DType::kFloat16;
  bool defined = true;

  TensorDesc desc() const {
    if (!defined) return TensorDesc::undefined();
    return TensorDesc{sizes.data(), strides.empty() ? nullptr : strides.data(), int(sizes.size()), dtype};
  }
};

inline OwnedTensor tensor(std::initializer_list<int64_t> sizes, DType dtype = DType::kFloat16) {
  return OwnedTensor{sizes, {}, dtype, true};
}

inline OwnedTensor absent() { return OwnedTensor{{}, {}, DType::kFloat16, false}; }

// The transpose view of a contiguous 2-D tensor.
inline OwnedTensor transposed(const OwnedTensor& t) {
  return OwnedTensor{{t.sizes[1], t.sizes[0]}, {1, t.sizes[1]}, t.dtype, true};
}

inline std::vector<TensorDesc> descs(std::initializer_list<OwnedTensor> tensors) {
  std::vector<TensorDesc> out;
  for (const auto& t : tensors) out.push_back(t.desc());
  return out;
}

}  // namespace npusim::perf::testing

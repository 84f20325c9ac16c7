// A tensor description that owns its sizes and strides, for callers that
// describe tensors themselves (the validation program, the tests) rather
// than pointing into framework tensors.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "perf/TensorDesc.h"

namespace npusim::perf {

struct OwnedTensor {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // empty: contiguous
  DType dtype = DType::kFloat16;
  bool defined = true;

  // Points into this object: valid while it lives and is not resized.
  TensorDesc desc() const {
    if (!defined) return TensorDesc::undefined();
    return TensorDesc{sizes.data(), strides.empty() ? nullptr : strides.data(), int(sizes.size()), dtype};
  }
  double numel() const {
    double n = 1;
    for (int64_t s : sizes) n *= double(s);
    return n;
  }
};

inline OwnedTensor tensor(std::initializer_list<int64_t> sizes, DType dtype = DType::kFloat16) {
  return OwnedTensor{sizes, {}, dtype, true};
}

// An absent operand (a missing bias, an output that was not requested).
inline OwnedTensor absent() { return OwnedTensor{{}, {}, DType::kFloat16, false}; }

// The transpose of a contiguous 2-D tensor as a view (what linear's W.t() is).
inline OwnedTensor transposed(const OwnedTensor& t) {
  return OwnedTensor{{t.sizes[1], t.sizes[0]}, {1, t.sizes[1]}, t.dtype, true};
}

}  // namespace npusim::perf

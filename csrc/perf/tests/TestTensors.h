// Owning tensor descriptions for the tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "perf/CostModel.h"
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

// Tensors and their descriptions, kept alive together (not copyable: the
// descriptions point into the tensors).
class Operands {
 public:
  Operands(std::initializer_list<OwnedTensor> list) : tensors_(list) {
    for (const auto& t : tensors_) descs_.push_back(t.desc());
  }
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;

  const TensorDesc* data() const { return descs_.empty() ? nullptr : descs_.data(); }
  int size() const { return int(descs_.size()); }

 private:
  std::vector<OwnedTensor> tensors_;
  std::vector<TensorDesc> descs_;
};

inline Cost price(const CostModel& model, OperatorKind kind, const Operands& inputs, const Operands& outputs,
                  Placement placement = Placement::kAiCore, CostOptions options = {},
                  std::vector<int64_t> intArgs = {}) {
  return model.price(kind, inputs.data(), inputs.size(), outputs.data(), outputs.size(), placement, options,
                     intArgs.empty() ? nullptr : intArgs.data(), int(intArgs.size()));
}

inline double seconds(const Cost& cost) { return double(cost.deviceNs) * 1e-9; }

}  // namespace npusim::perf::testing

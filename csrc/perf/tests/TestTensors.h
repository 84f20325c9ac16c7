// Owning tensor descriptions for the tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "perf/CostModel.h"
#include "perf/OwnedTensor.h"
#include "perf/TensorDesc.h"

namespace npusim::perf::testing {

using perf::absent;
using perf::OwnedTensor;
using perf::tensor;
using perf::transposed;

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

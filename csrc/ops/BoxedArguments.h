// Named access to the arguments of a boxed operator call (an OperatorHandle
// and its stack): for operators with dozens of keyword arguments, of which a
// kernel reads a few by name, and whose overloads share those names
// (npu_fused_infer_attention_score and its out=, workspace and v2 forms).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace npusim::ops {

class BoxedArguments {
 public:
  BoxedArguments(const c10::OperatorHandle& op, torch::jit::Stack* stack)
      : schema_(op.schema()), stack_(stack), base_(stack->size() - op.schema().arguments().size()) {}

  bool has(const std::string& name) const { return index(name).has_value(); }
  const c10::IValue& at(const std::string& name) const {
    const auto i = index(name);
    TORCH_INTERNAL_ASSERT(i.has_value(), schema_.name(), " has no argument ", name);
    return (*stack_)[base_ + *i];
  }
  bool present(const std::string& name) const { return has(name) && !at(name).isNone(); }
  at::Tensor tensor(const std::string& name) const { return at(name).toTensor(); }
  std::optional<at::Tensor> optionalTensor(const std::string& name) const {
    if (!present(name)) return std::nullopt;
    return at(name).toTensor();
  }
  int64_t integer(const std::string& name) const { return at(name).toInt(); }
  std::optional<int64_t> optionalInteger(const std::string& name) const {
    if (!present(name)) return std::nullopt;
    return at(name).toInt();
  }
  double real(const std::string& name) const { return at(name).toDouble(); }
  bool boolean(const std::string& name) const { return at(name).toBool(); }
  std::string text(const std::string& name) const { return std::string(at(name).toStringRef()); }
  // An int[] / SymInt[] argument (concrete values), empty when None.
  std::vector<int64_t> integers(const std::string& name) const {
    if (!present(name)) return {};
    const c10::IValue& value = at(name);
    if (value.isIntList()) return value.toIntVector();
    std::vector<int64_t> out;
    for (const c10::SymInt& v : value.toSymIntVector()) out.push_back(v.guard_int(__FILE__, __LINE__));
    return out;
  }
  std::vector<at::Tensor> tensors(const std::string& name) const { return at(name).toTensorVector(); }

  // Drops the arguments and pushes `results`.
  void finish(std::vector<c10::IValue> results) {
    torch::jit::drop(*stack_, schema_.arguments().size());
    for (auto& r : results) stack_->push_back(std::move(r));
  }

 private:
  std::optional<size_t> index(const std::string& name) const {
    const auto& arguments = schema_.arguments();
    for (size_t i = 0; i < arguments.size(); ++i) {
      if (arguments[i].name() == name) return i;
    }
    return std::nullopt;
  }

  const c10::FunctionSchema& schema_;
  torch::jit::Stack* stack_;
  size_t base_;
};

}  // namespace npusim::ops

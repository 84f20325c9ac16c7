#include "backend/numerics/Fp32Accumulation.h"

#include <algorithm>

namespace npusim::backend {
namespace {

bool isMatrixProduct(perf::OperatorKind kind) noexcept {
  return kind == perf::OperatorKind::kMatmul || kind == perf::OperatorKind::kBatchedMatmul ||
         kind == perf::OperatorKind::kAddMatmul || kind == perf::OperatorKind::kLinear;
}

}  // namespace

bool isReducedFloat(c10::ScalarType type) noexcept {
  return type == c10::ScalarType::Half || type == c10::ScalarType::BFloat16;
}

at::Tensor upcastCubeOperand(const at::Tensor& cpu) {
  if (!cpu.defined() || !isReducedFloat(cpu.scalar_type())) return cpu;
  return cpu.to(at::kFloat);
}

bool Fp32Accumulation::applies(perf::OperatorKind kind, c10::ScalarType firstFloatingDtype) noexcept {
  return isMatrixProduct(kind) && isReducedFloat(firstFloatingDtype);
}

Fp32Accumulation::Fp32Accumulation(perf::OperatorKind kind, torch::jit::Stack& stack, size_t first, size_t count,
                                   const std::vector<size_t>& writtenArguments) {
  if (!isMatrixProduct(kind)) return;
  // Every floating operand must have the one 16-bit dtype (mixed dtypes are
  // the CPU kernel's error to raise, unchanged).
  for (size_t i = 0; i < count; ++i) {
    const c10::IValue& value = stack[first + i];
    if (!value.isTensor() || !value.toTensor().defined()) continue;
    const c10::ScalarType type = value.toTensor().scalar_type();
    if (!c10::isFloatingType(type)) continue;
    if (dtype_ == c10::ScalarType::Undefined) dtype_ = type;
    if (type != dtype_ || !isReducedFloat(type)) return;
  }
  if (dtype_ == c10::ScalarType::Undefined) return;
  active_ = true;
  for (size_t i = 0; i < count; ++i) {
    c10::IValue& value = stack[first + i];
    if (!value.isTensor() || !value.toTensor().defined()) continue;
    const at::Tensor original = value.toTensor();
    if (original.scalar_type() != dtype_) continue;
    at::Tensor fp32 = original.to(at::kFloat);
    if (std::find(writtenArguments.begin(), writtenArguments.end(), i) != writtenArguments.end()) {
      written_.push_back(Written{original, fp32});
    }
    value = std::move(fp32);
  }
}

void Fp32Accumulation::roundResults(torch::jit::Stack& stack, size_t firstReturn) {
  if (!active_) return;
  for (const Written& w : written_) {
    if (!w.original.sizes().equals(w.fp32.sizes())) w.original.resize_(w.fp32.sizes());
    w.original.copy_(w.fp32);
  }
  for (size_t i = firstReturn; i < stack.size(); ++i) {
    c10::IValue& value = stack[i];
    if (!value.isTensor() || !value.toTensor().defined()) continue;
    const at::Tensor& result = value.toTensor();
    auto written = std::find_if(written_.begin(), written_.end(), [&](const Written& w) {
      return w.fp32.unsafeGetTensorImpl() == result.unsafeGetTensorImpl();
    });
    if (written != written_.end()) {
      value = written->original;
    } else if (result.scalar_type() == at::kFloat) {
      value = result.to(dtype_);
    }
  }
}

}  // namespace npusim::backend

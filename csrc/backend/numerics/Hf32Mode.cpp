#include "backend/numerics/Hf32Mode.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace npusim::backend {
namespace {

// fp32 keeps 23 mantissa bits, HF32 11: the low 12 bits go.
constexpr uint32_t kDroppedBits = 12;
constexpr uint32_t kDroppedMask = (1u << kDroppedBits) - 1;
constexpr uint32_t kExponentMask = 0x7f800000u;

uint32_t roundBits(uint32_t bits) noexcept {
  if ((bits & kExponentMask) == kExponentMask) return bits;  // Inf and NaN stay as they are
  // Adding half of the dropped range rounds the magnitude to nearest, ties
  // away from zero; a carry into the exponent gives the next power of two
  // (or Inf past the largest finite value), as the hardware conversion does.
  return (bits + (1u << (kDroppedBits - 1))) & ~kDroppedMask;
}

std::atomic<int64_t> matmulCalls{0};
std::atomic<int64_t> convolutionCalls{0};

bool isMatrixProduct(perf::OperatorKind kind) noexcept {
  return kind == perf::OperatorKind::kMatmul || kind == perf::OperatorKind::kBatchedMatmul ||
         kind == perf::OperatorKind::kAddMatmul || kind == perf::OperatorKind::kLinear;
}

}  // namespace

at::Tensor roundToHf32(const at::Tensor& cpu) {
  if (!cpu.defined() || cpu.scalar_type() != at::kFloat || cpu.is_meta()) return cpu;
  at::Tensor rounded = cpu.contiguous().clone();
  auto* data = rounded.data_ptr<float>();
  const int64_t count = rounded.numel();
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof bits);
    bits = roundBits(bits);
    std::memcpy(data + i, &bits, sizeof bits);
  }
  return rounded;
}

bool roundsMatmulOperandsForHf32(perf::OperatorKind kind) noexcept { return isMatrixProduct(kind) && hf32Matmul(); }

void roundMatmulOperandsForHf32(perf::OperatorKind kind, torch::jit::Stack& stack, size_t first, size_t count,
                                const std::vector<size_t>& writtenArguments) {
  if (!hf32Matmul() || !isMatrixProduct(kind)) return;
  // addmm / baddbmm / addbmm (C, A, B): C is added in fp32, not multiplied.
  // linear (x, W, bias): the bias likewise.
  size_t tensorIndex = 0;
  bool rounded = false;
  for (size_t i = 0; i < count; ++i) {
    c10::IValue& value = stack[first + i];
    if (!value.isTensor()) continue;
    const size_t position = tensorIndex++;
    if (std::find(writtenArguments.begin(), writtenArguments.end(), i) != writtenArguments.end()) continue;
    if (kind == perf::OperatorKind::kAddMatmul && position == 0) continue;
    if (kind == perf::OperatorKind::kLinear && position >= 2) continue;
    const at::Tensor& tensor = value.toTensor();
    if (tensor.defined() && tensor.scalar_type() == at::kFloat) {
      value = roundToHf32(tensor);
      rounded = true;
    }
  }
  if (rounded) matmulCalls.fetch_add(1, std::memory_order_relaxed);
}

at::Tensor convolutionOperandForHf32(const at::Tensor& cpu) {
  return hf32Convolution() ? roundToHf32(cpu) : cpu;
}

void countHf32Convolution(const at::Tensor& input) noexcept {
  if (hf32Convolution() && input.defined() && input.scalar_type() == at::kFloat) {
    convolutionCalls.fetch_add(1, std::memory_order_relaxed);
  }
}

Hf32Usage hf32Usage() noexcept {
  return {matmulCalls.load(std::memory_order_relaxed), convolutionCalls.load(std::memory_order_relaxed)};
}

void resetHf32Usage() noexcept {
  matmulCalls.store(0, std::memory_order_relaxed);
  convolutionCalls.store(0, std::memory_order_relaxed);
}

}  // namespace npusim::backend

// HF32 numerics. With a switch on (timing/Hf32Switches.h), the Cube multiplies
// fp32 operands in HF32, a format with fp32's range and an 11-bit mantissa;
// npusim rounds the fp32 operands of those kernels the same way before the CPU
// kernel runs (here), and the cost model prices the kernels at the HF32 rate.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>

#include "backend/timing/Hf32Switches.h"
#include "perf/OperatorKind.h"

namespace npusim::backend {

// A copy of an fp32 CPU tensor with every finite value rounded to HF32
// (ties away from zero); other dtypes are returned unchanged.
at::Tensor roundToHf32(const at::Tensor& cpu);

// Whether roundMatmulOperandsForHf32 changes the operands of an operator of
// `kind` now (a matrix product while matmul HF32 is on).
bool roundsMatmulOperandsForHf32(perf::OperatorKind kind) noexcept;

// For a matrix-product operator of `kind` with matmul HF32 on: replaces the
// fp32 tensors it multiplies (not an added bias, not a written output) among
// the `count` arguments from `first` on the stack by HF32-rounded copies.
void roundMatmulOperandsForHf32(perf::OperatorKind kind, torch::jit::Stack& stack, size_t first, size_t count,
                                const std::vector<size_t>& writtenArguments);

// A convolution operand (CPU alias) as the Cube reads it: HF32-rounded when
// conv HF32 is on and the operand is fp32.
at::Tensor convolutionOperandForHf32(const at::Tensor& cpu);

// How many operator calls computed in HF32 since the last reset, so that the
// run summary can say when results differ from an fp32 CPU run and why.
struct Hf32Usage {
  int64_t matmulCalls = 0;
  int64_t convolutionCalls = 0;
};
// Counts one convolution call (forward or backward) whose `input` is fp32 while conv HF32 is on.
void countHf32Convolution(const at::Tensor& input) noexcept;
Hf32Usage hf32Usage() noexcept;
void resetHf32Usage() noexcept;

}  // namespace npusim::backend

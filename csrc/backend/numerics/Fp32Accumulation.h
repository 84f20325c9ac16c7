// fp16 and bf16 matrix products as the Cube computes them: it multiplies the
// 16-bit operands exactly (every product of two fp16 or bf16 values is exact
// in fp32), accumulates in fp32, and rounds once when it writes the 16-bit
// result. The fused attention kernel works the same way around its products.
//
// PyTorch's CPU kernels for these dtypes are another story: for fp16 (and for
// bf16 on CPUs without bf16 matrix instructions) a product runs ATen's
// reference GEMM, more than ten times slower than the fp32 GEMM, and the
// flash-attention kernel spends most of its time in those products too. So
// npusim runs such a product as the fp32 kernel on fp32 copies of the 16-bit
// operands and rounds the result to the 16-bit dtype: the chip's arithmetic,
// at the host speed of an fp32 product. Results can differ from a CPU fp16
// run in the last bit where the CPU kernel rounds differently (its blocked
// sums, or attention probabilities rounded to 16 bits before the second
// product, which the CPU flash kernel and the chip's kernel both do and
// npusim does not); docs/usage.md says so.
//
// The fp32 copies live in host memory, outside the device allocator: they are
// the simulation's scratch, not memory the chip would hold. Only the 16-bit
// results are device memory.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "perf/OperatorKind.h"

namespace npusim::backend {

bool isReducedFloat(c10::ScalarType type) noexcept;

// `cpu` as an fp32 copy when it is fp16 or bf16 (host memory: call outside
// ScopedOutputDevice), else `cpu` itself.
at::Tensor upcastCubeOperand(const at::Tensor& cpu);

// For one boxed call of a matrix product (mm, bmm, addmm, baddbmm, addmv,
// dot, linear, in place and out= too) whose floating operands are all fp16
// or all bf16: replaces them on the stack by fp32 copies and, after the
// kernel, rounds its results back. Inactive (does nothing) for any other call.
class Fp32Accumulation {
 public:
  Fp32Accumulation(perf::OperatorKind kind, torch::jit::Stack& stack, size_t first, size_t count,
                   const std::vector<size_t>& writtenArguments);

  bool active() const noexcept { return active_; }

  // After the fp32 kernel, inside ScopedOutputDevice (the rounded results are
  // device memory): each fp32 result becomes the 16-bit result; a written
  // argument receives its fp32 copy's final value (resized like it) and takes
  // that copy's place among the returns.
  void roundResults(torch::jit::Stack& stack, size_t firstReturn);

  // Whether a matrix product of `kind` would run in fp32 for operands of
  // these dtypes (the unboxed path hands such calls to the boxed one).
  static bool applies(perf::OperatorKind kind, c10::ScalarType firstFloatingDtype) noexcept;

 private:
  struct Written {
    at::Tensor original;  // the kernel's operand (a CPU alias of device memory)
    at::Tensor fp32;      // its fp32 copy, which the kernel wrote
  };
  c10::SmallVector<Written, 2> written_;
  c10::ScalarType dtype_ = c10::ScalarType::Undefined;
  bool active_ = false;
};

}  // namespace npusim::backend

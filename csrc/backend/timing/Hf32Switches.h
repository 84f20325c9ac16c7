// The HF32 switches: torch.npu.matmul.allow_hf32 (default off) and
// torch.npu.conv.allow_hf32 (default on). They live with the pricing because
// the cost model prices Cube kernels at the HF32 rate while a switch is on;
// numerics/Hf32Mode rounds the operands by the same switches.
#pragma once

#include "perf/CostModel.h"

namespace npusim::backend {

void setHf32(bool matmul, bool convolution) noexcept;
// The matmul switch as the calling thread sees it: the thread's override if one is in force,
// else torch.npu.matmul.allow_hf32.
bool hf32Matmul() noexcept;
bool hf32Convolution() noexcept;

// While alive, the calling thread's Cube matmuls use HF32 exactly when `enabled`, whatever the
// process switch says: an aclnn matmul chooses per call through its cubeMathType argument
// (csrc/acl/aclnn), where the PyTorch face chooses through torch.npu.matmul.allow_hf32.
class ScopedMatmulHf32 {
 public:
  explicit ScopedMatmulHf32(bool enabled) noexcept;
  ~ScopedMatmulHf32();
  ScopedMatmulHf32(const ScopedMatmulHf32&) = delete;
  ScopedMatmulHf32& operator=(const ScopedMatmulHf32&) = delete;

 private:
  int previous_;
};

// The switches as the cost model takes them.
perf::CostOptions hf32CostOptions() noexcept;

}  // namespace npusim::backend

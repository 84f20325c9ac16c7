// The HF32 switches: torch.npu.matmul.allow_hf32 (default off) and
// torch.npu.conv.allow_hf32 (default on). They live with the pricing because
// the cost model prices Cube kernels at the HF32 rate while a switch is on;
// numerics/Hf32Mode rounds the operands by the same switches.
#pragma once

#include "perf/CostModel.h"

namespace npusim::backend {

void setHf32(bool matmul, bool convolution) noexcept;
bool hf32Matmul() noexcept;
bool hf32Convolution() noexcept;

// The switches as the cost model takes them.
perf::CostOptions hf32CostOptions() noexcept;

}  // namespace npusim::backend

// The operator executor (see OperatorExecutor.cpp).
#pragma once

#include <cstddef>

namespace npusim::backend {

// Makes every aten operator that has a CPU kernel run that kernel on npu,
// also where ATen has a composite kernel for other devices. Idempotent;
// returns how many operators it registered. Called once the dispatcher holds
// all of PyTorch's kernels (when npusim._C is imported).
size_t routeCpuKernelsThroughExecutor();

}  // namespace npusim::backend

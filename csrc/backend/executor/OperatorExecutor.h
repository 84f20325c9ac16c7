// The operator executor (see OperatorExecutor.cpp).
#pragma once

#include <cstddef>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace npusim::backend {

// The boxed executor: runs `op`'s CPU kernel on npu for the arguments on
// `stack`, leaving the npu results there. The PrivateUse1 fallback of every
// aten operator; the unboxed path (UnboxedExecutor.h) hands calls it does not
// take to it.
void executeOnNpu(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

// Makes every aten operator that has a CPU kernel run that kernel on npu,
// also where ATen has a composite kernel for other devices. Idempotent;
// returns how many operators it registered. Called once the dispatcher holds
// all of PyTorch's kernels (when npusim._C is imported).
size_t routeCpuKernelsThroughExecutor();

}  // namespace npusim::backend

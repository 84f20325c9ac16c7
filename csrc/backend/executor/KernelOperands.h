// For the operators the backend implements by calling an ATen host kernel
// itself (convolutions, fused attention): the operand a host kernel works on
// (a CPU alias, or a meta alias in estimate-only mode) and the npu tensor
// made of its result.
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

at::Tensor kernelOperand(const at::Tensor& npu);
at::Tensor kernelOperandOrUndefined(const at::Tensor& npu);
std::optional<at::Tensor> kernelOperand(const std::optional<at::Tensor>& npu);

at::Tensor npuResult(const at::Tensor& result, int device);
at::Tensor npuResultOrUndefined(const at::Tensor& result, int device);

}  // namespace npusim::backend

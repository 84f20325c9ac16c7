// Convolutions. ATen routes a convolution on a device it does not know to
// convolution_overrideable (and its backward), which have no CPU kernel for
// the executor to reuse, so the npu backend provides them: CPU aliases in,
// ATen's CPU convolution, device memory out, as the executor does.
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/TensorAliasing.h"
#include "backend/executor/KernelOperands.h"
#include "backend/numerics/Hf32Mode.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "perf/CostModel.h"

namespace npusim::backend {
namespace {

// The device check these native kernels would bypass by running the CPU
// convolution on aliases: every tensor must be on the input's npu device. A
// CPU tensor fails in torch_npu's words (NpuErrors.h), two npu devices in
// PyTorch's.
void checkSameDevice(const at::Tensor& input, std::initializer_list<const at::Tensor*> others) {
  for (const at::Tensor* other : others) {
    if (other == nullptr || !other->defined() || other->device() == input.device()) continue;
    if (other->device().is_cpu() || input.device().is_cpu()) throwExpectedNpuTensor();
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ",
                input.device(), " and ", other->device(), "!");
  }
}

at::Tensor convolutionOverrideable(const at::Tensor& input, const at::Tensor& weight,
                                   const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                   c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                   c10::IntArrayRef outputPadding, int64_t groups) {
  checkSameDevice(input, {&weight, bias.has_value() ? &*bias : nullptr});
  const int device = input.device().index();
  const c10::DeviceGuard guard(input.device());
  std::optional<at::Tensor> cpuBias;
  if (bias.has_value() && bias->defined()) cpuBias = kernelOperand(*bias);
  countHf32Convolution(input);
  at::Tensor output;
  {
    const ScopedOutputDevice outputs(device);
    output = at::convolution(convolutionOperandForHf32(kernelOperand(input)),
                             convolutionOperandForHf32(kernelOperand(weight)), cpuBias, stride, padding, dilation,
                             transposed, outputPadding, groups);
  }
  const perf::TensorDesc operands[] = {describeTensor(input), describeTensor(weight),
                                        cpuBias ? describeTensor(*bias) : perf::TensorDesc::undefined()};
  const perf::TensorDesc result = describeTensor(output);
  const int64_t arguments[] = {transposed ? 1 : 0, groups};
  static OperatorRecord& record = nativeOperatorRecord("aten::convolution_overrideable");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kConvolution, operands, 3, &result, 1,
                                         runtime::Placement::kAiCore, false, arguments, 2));
  return npuResult(output, device);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolutionBackwardOverrideable(
    const at::Tensor& gradOutput, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef outputPadding,
    int64_t groups, std::array<bool, 3> outputMask) {
  checkSameDevice(input, {&gradOutput, &weight});
  const int device = input.device().index();
  const c10::DeviceGuard guard(input.device());
  // The bias has one element per output channel.
  const int64_t outputChannels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> biasSizes{outputChannels};
  countHf32Convolution(input);
  std::tuple<at::Tensor, at::Tensor, at::Tensor> grads;
  {
    const ScopedOutputDevice outputs(device);
    grads = at::convolution_backward(convolutionOperandForHf32(kernelOperandOrUndefined(gradOutput)),
                                     convolutionOperandForHf32(kernelOperand(input)),
                                     convolutionOperandForHf32(kernelOperand(weight)), biasSizes, stride, padding,
                                     dilation, transposed, outputPadding, groups, outputMask);
  }
  const perf::TensorDesc operands[] = {describeTensor(gradOutput), describeTensor(input), describeTensor(weight)};
  const perf::TensorDesc results[] = {describeTensor(std::get<0>(grads)), describeTensor(std::get<1>(grads)),
                                      describeTensor(std::get<2>(grads))};
  namespace args = perf::convolution_args;
  const int64_t mask = (outputMask[0] ? args::kGradInput : 0) | (outputMask[1] ? args::kGradWeight : 0) |
                       (outputMask[2] ? args::kGradBias : 0);
  const int64_t arguments[] = {transposed ? 1 : 0, groups, mask};
  static OperatorRecord& record = nativeOperatorRecord("aten::convolution_backward_overrideable");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kConvolutionBackward, operands, 3, results, 3,
                                         runtime::Placement::kAiCore, false, arguments, 3));
  return {npuResultOrUndefined(std::get<0>(grads), device), npuResultOrUndefined(std::get<1>(grads), device),
          npuResultOrUndefined(std::get<2>(grads), device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolutionOverrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackwardOverrideable));
}

}  // namespace npusim::backend

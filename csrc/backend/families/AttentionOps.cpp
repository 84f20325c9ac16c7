// Fused scaled-dot-product attention. torch_npu runs F.scaled_dot_product_attention as one fused
// kernel (npu_fusion_attention, FlashAttention-style: no L x S score matrix in device memory);
// ATen's math fallback would run it as bmm, softmax and masking operators with the score matrix
// materialised, which costs far more time and memory than the real chip spends. The npu backend
// therefore takes PyTorch's "overrideable" fused path whenever the CPU would take its own fused
// (flash) kernel, and runs that CPU kernel on the device memory, so results equal a CPU run (for
// fp16/bf16 inputs the fp32 kernel on upcast copies, rounded once: Fp32Accumulation.h).
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/executor/KernelOperands.h"
#include "backend/numerics/Fp32Accumulation.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "perf/CostModel.h"

namespace npusim::backend {
namespace {

int64_t fusedSdpChoice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attnMask, double dropoutP, bool isCausal,
                       std::optional<double> scale, bool enableGqa) {
  // The CPU's own choice for the same call decides: fused where it would
  // fuse. The choice depends on metadata only (also in estimate-only mode).
  const int64_t cpuChoice = at::native::_fused_sdp_choice_cpp(query, key, value, attnMask, dropoutP, isCausal, scale,
                                                              enableGqa);
  return cpuChoice == static_cast<int64_t>(sdp::SDPBackend::flash_attention)
             ? static_cast<int64_t>(sdp::SDPBackend::overrideable)
             : cpuChoice;
}

perf::TensorDesc describe(const at::Tensor& t) { return describeTensor(t); }

std::optional<at::Tensor> upcastOptional(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  return upcastCubeOperand(*t);
}

}  // namespace

int64_t fusedSdpChoiceForStub(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                              const std::optional<at::Tensor>& attnMask, double dropoutP, bool isCausal,
                              std::optional<double> scale, bool enableGqa) {
  return fusedSdpChoice(query, key, value, attnMask, dropoutP, isCausal, scale, enableGqa);
}

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor,
           at::Tensor>
fusedAttention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
               const std::optional<at::Tensor>& attnBias, double dropoutP, bool isCausal, bool returnDebugMask,
               std::optional<double> scale) {
  const int device = query.device().index();
  const c10::DeviceGuard guard(query.device());
  std::tuple<at::Tensor, at::Tensor> results;
  if (isReducedFloat(query.scalar_type())) {
    // fp16/bf16: the fp32 kernel on fp32 copies (host scratch), the output rounded into device
    // memory once, as the chip's kernel accumulates (Fp32Accumulation.h).
    results = at::_scaled_dot_product_flash_attention_for_cpu(
        upcastCubeOperand(kernelOperand(query)), upcastCubeOperand(kernelOperand(key)),
        upcastCubeOperand(kernelOperand(value)), dropoutP, isCausal, upcastOptional(kernelOperand(attnBias)), scale);
    const ScopedOutputDevice outputs(device);
    std::get<0>(results) = std::get<0>(results).to(query.scalar_type());
  } else {
    const ScopedOutputDevice outputs(device);
    results = at::_scaled_dot_product_flash_attention_for_cpu(kernelOperand(query), kernelOperand(key),
                                                              kernelOperand(value), dropoutP, isCausal,
                                                              kernelOperand(attnBias), scale);
  }
  const perf::TensorDesc operands[] = {describe(query), describe(key), describe(value)};
  const perf::TensorDesc produced[] = {describe(std::get<0>(results)), describe(std::get<1>(results))};
  const int64_t arguments[] = {isCausal ? 1 : 0, static_cast<int64_t>(perf::AttentionLayout::kBNSD), query.size(1)};
  static OperatorRecord& record = nativeOperatorRecord("aten::_scaled_dot_product_fused_attention_overrideable");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kAttention, operands, 3, produced, 2,
                                         runtime::Placement::kAiCore, false, arguments, 3));
  const at::Tensor empty = at::empty({0}, query.options().dtype(at::kLong));
  return {npuResult(std::get<0>(results), device),
          npuResult(std::get<1>(results), device),
          at::Tensor(),
          at::Tensor(),
          c10::SymInt(query.size(2)),
          c10::SymInt(key.size(2)),
          empty,
          empty,
          at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedAttentionBackward(
    const at::Tensor& gradOut, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attnBias, std::array<bool, 4> gradInputMask, const at::Tensor& out, const at::Tensor& logsumexp,
    const at::Tensor& cumSeqQ, const at::Tensor& cumSeqK, int64_t maxQ, int64_t maxK, double dropoutP, bool isCausal,
    const at::Tensor& philoxSeed, const at::Tensor& philoxOffset, std::optional<double> scale) {
  const int device = query.device().index();
  const c10::DeviceGuard guard(query.device());
  std::optional<at::Tensor> bias;
  if (attnBias.defined()) bias = attnBias;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> grads;
  if (isReducedFloat(query.scalar_type())) {
    grads = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        upcastCubeOperand(kernelOperand(gradOut)), upcastCubeOperand(kernelOperand(query)),
        upcastCubeOperand(kernelOperand(key)), upcastCubeOperand(kernelOperand(value)),
        upcastCubeOperand(kernelOperand(out)), kernelOperand(logsumexp), dropoutP, isCausal,
        upcastOptional(kernelOperand(bias)), scale);
    const ScopedOutputDevice outputs(device);
    for (at::Tensor* grad : {&std::get<0>(grads), &std::get<1>(grads), &std::get<2>(grads)}) {
      if (grad->defined()) *grad = grad->to(query.scalar_type());
    }
  } else {
    const ScopedOutputDevice outputs(device);
    grads = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        kernelOperand(gradOut), kernelOperand(query), kernelOperand(key), kernelOperand(value), kernelOperand(out),
        kernelOperand(logsumexp), dropoutP, isCausal, kernelOperand(bias), scale);
  }
  const perf::TensorDesc operands[] = {describe(gradOut), describe(query), describe(key), describe(value)};
  const perf::TensorDesc produced[] = {describe(std::get<0>(grads)), describe(std::get<1>(grads)),
                                       describe(std::get<2>(grads))};
  const int64_t arguments[] = {isCausal ? 1 : 0, static_cast<int64_t>(perf::AttentionLayout::kBNSD), query.size(1)};
  static OperatorRecord& record =
      nativeOperatorRecord("aten::_scaled_dot_product_fused_attention_overrideable_backward");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kAttentionBackward, operands, 4, produced, 3,
                                         runtime::Placement::kAiCore, false, arguments, 3));
  // An attention bias gets no gradient from the fused kernel, as on CUDA's flash path.
  return {gradInputMask[0] ? npuResult(std::get<0>(grads), device) : at::Tensor(),
          gradInputMask[1] ? npuResult(std::get<1>(grads), device) : at::Tensor(),
          gradInputMask[2] ? npuResult(std::get<2>(grads), device) : at::Tensor(), at::Tensor()};
}

}  // namespace

}  // namespace npusim::backend

namespace at::native {
// scaled_dot_product_attention asks this stub, per device type, which kernel to use.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &npusim::backend::fusedSdpChoiceForStub)
}  // namespace at::native

namespace npusim::backend {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fusedSdpChoice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fusedAttention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fusedAttentionBackward));
}

}  // namespace npusim::backend

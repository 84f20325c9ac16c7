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
#include <ATen/ExpandUtils.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "backend/device/NpuAllocator.h"
#include "backend/executor/KernelOperands.h"
#include "backend/numerics/Fp32Accumulation.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/EstimateMode.h"
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
  // float64 has no fused attention kernel on the chip (npu_fusion_attention takes fp16, bf16
  // and fp32), so it stays on the math path, as it does with torch_npu.
  const bool chipType = query.scalar_type() != at::kDouble;
  return cpuChoice == static_cast<int64_t>(sdp::SDPBackend::flash_attention) && chipType
             ? static_cast<int64_t>(sdp::SDPBackend::overrideable)
             : (cpuChoice == static_cast<int64_t>(sdp::SDPBackend::flash_attention)
                    ? static_cast<int64_t>(sdp::SDPBackend::math)
                    : cpuChoice);
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

// The layouts of the results are those of PyTorch's Meta functions for the overrideable operators
// (torch/_meta_registrations.py), which is what torch.compile traces with: Inductor asserts every
// extern kernel's outputs against them, so the real kernel must produce exactly these. The CPU
// flash kernel's operators return logsumexp as (B, L, H) transposed (Meta: (B, H, L) contiguous)
// and the gradients as (B, L, H, E) transposed (Meta: like their inputs); where they differ, the
// result is copied into the Meta layout (logsumexp is 1/E of the output; a gradient's copy is
// O(L E) against the kernel's O(L S E)). The copy is part of the fused kernel: not charged apart.

// The strides empty_like(like) gives (the Meta functions' allocation).
std::vector<int64_t> stridesLike(const at::Tensor& like) {
  if (like.is_non_overlapping_and_dense()) return like.strides().vec();
  return at::infer_dense_strides(like.sizes(), like.strides());
}

// The output: like the query (alloc_with_matching_layout: same sizes, hence empty_like's strides).
std::vector<int64_t> outputStrides(const at::Tensor& query, int64_t valueHeadSize) {
  if (valueHeadSize == query.size(-1)) return stridesLike(query);
  std::array<int64_t, 4> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  const std::array<int64_t, 4> sizes = {query.size(0), query.size(1), query.size(2), valueHeadSize};
  std::vector<int64_t> strides(4);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= sizes[*it];
  }
  return strides;
}

// The npu tensor of a host kernel's result, in the given strides (copied there if it is not).
at::Tensor inLayout(const at::Tensor& produced, at::IntArrayRef strides, int device) {
  if (produced.strides() == strides) return npuResult(produced, device);
  const at::Tensor placed = at::empty_strided(produced.sizes(), strides,
                                              produced.options().device(c10::Device(c10::DeviceType::PrivateUse1, device)));
  if (!estimateOnly()) kernelOperand(placed).copy_(produced);
  return placed;
}

double softmaxScale(const at::Tensor& query, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

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
  const at::Tensor output = inLayout(std::get<0>(results), outputStrides(query, value.size(3)), device);
  // Softmax statistics (B, H, L) contiguous.
  const at::Tensor& statistics = std::get<1>(results);
  const at::Tensor logsumexp =
      inLayout(statistics, {statistics.size(1) * statistics.size(2), statistics.size(2), 1}, device);
  const perf::TensorDesc operands[] = {describe(query), describe(key), describe(value)};
  const perf::TensorDesc produced[] = {describe(output), describe(logsumexp)};
  const int64_t arguments[] = {isCausal ? 1 : 0, static_cast<int64_t>(perf::AttentionLayout::kBNSD), query.size(1)};
  static OperatorRecord& record = nativeOperatorRecord("aten::_scaled_dot_product_fused_attention_overrideable");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kAttention, operands, 3, produced, 2,
                                         runtime::Placement::kAiCore, false, arguments, 3));
  // No dropout, so the philox seed and offset are unused; zero-dimensional as in the Meta
  // function, and two tensors, since outputs of an operator must not alias each other.
  const auto seedOptions = query.options().dtype(at::kLong);
  return {output,
          logsumexp,
          at::Tensor(),
          at::Tensor(),
          c10::SymInt(query.size(2)),
          c10::SymInt(key.size(2)),
          at::empty({}, seedOptions),
          at::empty({}, seedOptions),
          at::Tensor()};
}

// The gradient of an additive attention bias (only when it requires one: SDPA sends a bias that
// requires grad to the math path, so this is reached by direct calls of the operator). The
// fused kernel keeps no score matrix, so the softmax is rebuilt from the saved logsumexp:
// P = exp(scale * Q K^T + bias - lse), dS = P * (dO V^T - rowsum(dO * O)), summed to the bias's shape.
at::Tensor attentionBiasGradient(const at::Tensor& gradOut, const at::Tensor& query, const at::Tensor& key,
                                 const at::Tensor& value, const at::Tensor& bias, const at::Tensor& out,
                                 const at::Tensor& logsumexp, bool isCausal, std::optional<double> scale) {
  const auto opmath = at::kFloat;
  at::Tensor scores =
      at::matmul(query.to(opmath), key.to(opmath).transpose(-2, -1)).mul(softmaxScale(query, scale)).add(bias.to(opmath));
  if (isCausal) {
    const at::Tensor above = at::ones({query.size(2), key.size(2)}, scores.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(above, -std::numeric_limits<float>::infinity());
  }
  const at::Tensor probabilities = scores.sub(logsumexp.to(opmath).unsqueeze(-1)).exp();
  const at::Tensor rowSums = gradOut.to(opmath).mul(out.to(opmath)).sum(-1, true);
  const at::Tensor gradScores =
      probabilities.mul(at::matmul(gradOut.to(opmath), value.to(opmath).transpose(-2, -1)).sub(rowSums));
  return gradScores.sum_to_size(bias.sizes()).to(bias.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedAttentionBackward(
    const at::Tensor& gradOut, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attnBias, std::array<bool, 4> gradInputMask, const at::Tensor& out, const at::Tensor& logsumexp,
    const at::Tensor& cumSeqQ, const at::Tensor& cumSeqK, int64_t maxQ, int64_t maxK, double dropoutP, bool isCausal,
    const at::Tensor& philoxSeed, const at::Tensor& philoxOffset, std::optional<double> scale) {
  if (!gradOut.defined()) return {};
  std::optional<at::Tensor> bias;
  if (attnBias.defined()) bias = attnBias;
  const int device = query.device().index();
  const c10::DeviceGuard guard(query.device());
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
  // Gradients like their inputs (the Meta function's empty_like).
  const at::Tensor gradQuery = inLayout(std::get<0>(grads), stridesLike(query), device);
  const at::Tensor gradKey = inLayout(std::get<1>(grads), stridesLike(key), device);
  const at::Tensor gradValue = inLayout(std::get<2>(grads), stridesLike(value), device);
  // With a bias, a fourth result as the Meta function has one; computed only when asked for (a
  // bias that requires grad); otherwise it is the unread placeholder the Meta function returns.
  at::Tensor gradBias;
  if (bias.has_value()) gradBias = at::empty_like(attnBias);
  if (gradInputMask[3] && bias.has_value()) {
    if (!estimateOnly()) {
      kernelOperand(gradBias).copy_(attentionBiasGradient(kernelOperand(gradOut), kernelOperand(query),
                                                          kernelOperand(key), kernelOperand(value),
                                                          kernelOperand(attnBias), kernelOperand(out),
                                                          kernelOperand(logsumexp), isCausal, scale));
    }
  }
  const perf::TensorDesc operands[] = {describe(gradOut), describe(query), describe(key), describe(value)};
  const perf::TensorDesc produced[] = {describe(gradQuery), describe(gradKey), describe(gradValue)};
  const int64_t arguments[] = {isCausal ? 1 : 0, static_cast<int64_t>(perf::AttentionLayout::kBNSD), query.size(1)};
  static OperatorRecord& record =
      nativeOperatorRecord("aten::_scaled_dot_product_fused_attention_overrideable_backward");
  countNativeCall(record, chargeOperator(device, perf::OperatorKind::kAttentionBackward, operands, 4, produced, 3,
                                         runtime::Placement::kAiCore, false, arguments, 3));
  return {gradInputMask[0] ? gradQuery : at::Tensor(), gradInputMask[1] ? gradKey : at::Tensor(),
          gradInputMask[2] ? gradValue : at::Tensor(), gradBias};
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

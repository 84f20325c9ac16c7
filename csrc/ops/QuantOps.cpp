// npu_dynamic_quant (reference §5.6): per-token symmetric int8 quantisation,
// scale = rowmax|x * smooth| / 127, one fused kernel.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;

constexpr double kInt8Max = 127.0;

std::tuple<Tensor, Tensor> dynamicQuantHost(const Tensor& input, const OptionalTensor& smoothScales,
                                            const OptionalTensor& groupIndex, std::optional<int64_t> dstType,
                                            c10::string_view quantMode, double dstTypeMax) {
  NPU_OPS_CHECK(input.dim() >= 2, "npu_dynamic_quant: input must be at least 2-dimensional, but got ", input.dim(),
                "-dimensional");
  NPU_OPS_CHECK(input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16,
                "npu_dynamic_quant supports float16 and bfloat16, but got ", input.scalar_type());
  TORCH_CHECK(quantMode == "pertoken" && !groupIndex.has_value() &&
                  (!dstType.has_value() || *dstType == static_cast<int64_t>(at::kChar)),
              "npu_dynamic_quant: npusim supports quant_mode 'pertoken' to int8 without group_index only.",
              notSupported());
  Tensor x = input.to(at::kFloat);
  if (smoothScales.has_value()) x = x * smoothScales->to(at::kFloat);
  const Tensor scale = x.abs().amax(-1) / kInt8Max;
  const Tensor safe = at::where(scale > 0, scale, at::ones_like(scale));
  const Tensor y = at::round(x / safe.unsqueeze(-1)).clamp(-128, 127).to(at::kChar);
  return {y, scale};
}

std::tuple<Tensor, Tensor> dynamicQuantNpu(const Tensor& input, const OptionalTensor& smoothScales,
                                           const OptionalTensor& groupIndex, std::optional<int64_t> dstType,
                                           c10::string_view quantMode, double dstTypeMax) {
  requireChip("npu_dynamic_quant", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&input});
  requireNpuTensor(smoothScales);
  const int device = input.device().index();
  auto [y, scale] = dynamicQuantHost(hostOperand(input), hostOperand(smoothScales), hostOperand(groupIndex), dstType,
                                     quantMode, dstTypeMax);
  chargeFusedKernel(device, "npu::npu_dynamic_quant", perf::OperatorKind::kReduction,
                    streamingWork({&input}, {&y, &scale}, double(input.numel()), 4.0));
  return {deviceResult(y, device), deviceResult(scale, device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) { m.impl("npu_dynamic_quant", TORCH_FN(dynamicQuantNpu)); }
TORCH_LIBRARY_IMPL(npu, Meta, m) { m.impl("npu_dynamic_quant", TORCH_FN(dynamicQuantHost)); }

}  // namespace npusim::ops

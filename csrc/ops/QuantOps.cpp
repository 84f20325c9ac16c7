// Quantisation helpers of torch_npu (reference §5.6), each one fused kernel:
// npu_dynamic_quant (per-token symmetric int8, scale = rowmax|x * smooth| / 127)
// and npu_quant_matmul (int8 x int8 on the Cube, int32 accumulation, then
// dequantisation by scale, per-token scale, offset and bias).
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

// ---- quantised matmul

#define NPUSIM_QMM_PARAMS                                                                                          \
  const Tensor &x1, const Tensor &x2, const Tensor &scale, const OptionalTensor &offset,                          \
      const OptionalTensor &pertokenScale, const OptionalTensor &bias, std::optional<int64_t> outputDtype,         \
      std::optional<int64_t> x1Dtype, std::optional<int64_t> x2Dtype, std::optional<int64_t> pertokenScaleDtype,   \
      std::optional<int64_t> scaleDtype, at::OptionalIntArrayRef groupSizes, const OptionalTensor &yScale
#define NPUSIM_QMM_ARGS                                                                                            \
  x1, x2, scale, offset, pertokenScale, bias, outputDtype, x1Dtype, x2Dtype, pertokenScaleDtype, scaleDtype,       \
      groupSizes, yScale

at::ScalarType quantOutputDtype(std::optional<int64_t> outputDtype) {
  if (!outputDtype.has_value()) return at::kChar;
  const auto dtype = static_cast<at::ScalarType>(*outputDtype);
  NPU_OPS_CHECK_VALUE(dtype == at::kChar || dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kInt,
                      "npu_quant_matmul: output_dtype must be int8, float16, bfloat16 or int32, but got ",
                      *outputDtype);
  return dtype;
}

Tensor quantMatmulHost(NPUSIM_QMM_PARAMS) {
  NPU_OPS_CHECK(x1.scalar_type() == at::kChar && x2.scalar_type() == at::kChar,
                "npu_quant_matmul: npusim supports int8 x1 and x2, but got ", x1.scalar_type(), " and ",
                x2.scalar_type());
  NPU_OPS_CHECK(x1.dim() >= 2 && x1.dim() <= 6 && x2.dim() >= 2 && x2.dim() <= 6,
                "npu_quant_matmul: x1 and x2 must be 2 to 6 dimensional, but got ", x1.dim(), " and ", x2.dim());
  NPU_OPS_CHECK(x1.size(-1) == x2.size(-2), "npu_quant_matmul: the inner dimensions differ: ", x1.sizes(), " and ",
                x2.sizes());
  TORCH_CHECK(!groupSizes.has_value() && !yScale.has_value() && !x1Dtype.has_value() && !x2Dtype.has_value(),
              "npu_quant_matmul: group_sizes, y_scale and the fp8/hif8/MX dtypes are not supported by npusim.",
              notSupported());
  const at::ScalarType dtype = quantOutputDtype(outputDtype);
  // int8 products summed in float64 are exact (the chip accumulates in int32).
  Tensor y = at::matmul(x1.to(at::kDouble), x2.to(at::kDouble));
  const bool intBias = bias.has_value() && bias->scalar_type() == at::kInt;
  if (intBias) y = y + bias->to(at::kDouble);
  if (dtype == at::kInt) {
    NPU_OPS_CHECK(!pertokenScale.has_value() && !offset.has_value(),
                  "npu_quant_matmul: int32 output takes no pertoken_scale or offset");
    return y.to(at::kInt);
  }
  y = y * scale.to(at::kDouble);
  if (pertokenScale.has_value()) y = y * pertokenScale->to(at::kDouble).unsqueeze(-1);
  if (bias.has_value() && !intBias) y = y + bias->to(at::kDouble);
  if (offset.has_value()) y = y + offset->to(at::kDouble);
  if (dtype == at::kChar) return at::round(y).clamp(-128, 127).to(at::kChar);
  return y.to(dtype);
}

Tensor quantMatmulMeta(NPUSIM_QMM_PARAMS) { return quantMatmulHost(NPUSIM_QMM_ARGS); }

Tensor quantMatmulNpu(NPUSIM_QMM_PARAMS) {
  requireChip("npu_quant_matmul", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P});
  requireNpuTensors({&x1, &x2, &scale});
  requireNpuTensor(offset);
  requireNpuTensor(pertokenScale);
  requireNpuTensor(bias);
  const int device = x1.device().index();
  const Tensor out = quantMatmulHost(hostOperand(x1), hostOperand(x2), hostOperand(scale), hostOperand(offset),
                                     hostOperand(pertokenScale), hostOperand(bias), outputDtype, x1Dtype, x2Dtype,
                                     pertokenScaleDtype, scaleDtype, groupSizes, hostOperand(yScale));
  perf::FusedKernelWork work;
  work.precision = perf::CubePrecision::kInt8;
  work.operandBytes = 1;
  const int64_t k = x1.size(-1);
  const int64_t m = x1.size(-2);
  const int64_t n = x2.size(-1);
  const int64_t batch = k > 0 && m > 0 ? std::max<int64_t>(1, out.numel() / std::max<int64_t>(1, m * n)) : 1;
  work.addGemm(perf::GemmShape{batch, m, n, k});
  work.vectorElements = double(out.numel());
  work.opsPerElement = 4;  // dequantise: scale, per-token scale, offset, cast
  work.hbmBytes = bytesOf(x1) + bytesOf(x2) + bytesOf(scale) + bytesOf(pertokenScale) + bytesOf(bias) +
                  bytesOf(offset) + bytesOf(out);
  chargeFusedKernel(device, "npu::npu_quant_matmul", perf::OperatorKind::kMatmul, work);
  return deviceResult(out, device);
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_dynamic_quant", TORCH_FN(dynamicQuantNpu));
  m.impl("npu_quant_matmul", TORCH_FN(quantMatmulNpu));
}
TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_dynamic_quant", TORCH_FN(dynamicQuantHost));
  m.impl("npu_quant_matmul", TORCH_FN(quantMatmulMeta));
}

}  // namespace npusim::ops

// npu_rms_norm, npu_rms_norm_backward (reference §4.2) and npu_add_rms_norm
// (§5.3): RMSNorm over gamma's dims with fp32 statistics, one fused kernel
// each (the unfused form is six element-wise and reduction kernels).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;

std::vector<int64_t> normalisedDims(const Tensor& x, const Tensor& gamma) {
  const int64_t k = gamma.dim();
  NPU_OPS_CHECK(k >= 1 && k <= x.dim() && x.sizes().slice(x.dim() - k).equals(gamma.sizes()),
                "The shape of gamma ", gamma.sizes(), " must equal the last ", k, " dimensions of x ", x.sizes());
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

void checkFloating(const Tensor& x, const char* op) {
  NPU_OPS_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kFloat,
                op, " supports float16, bfloat16 and float32, but got ", x.scalar_type());
}

std::tuple<Tensor, Tensor> rmsNormHost(const Tensor& x, const Tensor& gamma, double epsilon) {
  checkFloating(x, "npu_rms_norm");
  const auto dims = normalisedDims(x, gamma);
  const Tensor xf = x.to(at::kFloat);
  const Tensor rstd = at::rsqrt(xf.square().mean(dims, true) + epsilon);
  const Tensor y = (xf * rstd * gamma.to(at::kFloat)).to(x.scalar_type());
  return {y, rstd};
}

std::tuple<Tensor, Tensor> rmsNormBackwardHost(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                               const Tensor& rstd) {
  const auto dims = normalisedDims(x, gamma);
  const Tensor xf = x.to(at::kFloat), dyf = dy.to(at::kFloat), rstdf = rstd.to(at::kFloat);
  const Tensor dyg = dyf * gamma.to(at::kFloat);
  const Tensor dx = rstdf * (dyg - xf * rstdf.square() * (dyg * xf).mean(dims, true));
  std::vector<int64_t> leading;
  for (int64_t d = 0; d < x.dim() - gamma.dim(); ++d) leading.push_back(d);
  Tensor dgamma = dyf * xf * rstdf;
  if (!leading.empty()) dgamma = dgamma.sum(leading);
  return {dx.to(x.scalar_type()), dgamma.to(gamma.scalar_type())};
}

std::tuple<Tensor, Tensor, Tensor> addRmsNormHost(const Tensor& x1, const Tensor& x2, const Tensor& gamma,
                                                  double epsilon) {
  const Tensor x = (x1 + x2).to(x1.scalar_type());
  auto [y, rstd] = rmsNormHost(x, gamma, epsilon);
  return {y, rstd, x};
}

perf::FusedKernelWork normWork(std::initializer_list<const Tensor*> in, std::initializer_list<const Tensor*> out,
                               const Tensor& x) {
  return streamingWork(in, out, double(x.numel()), perf::calibration::kOpsNormalization);
}

std::tuple<Tensor, Tensor> rmsNormNpu(const Tensor& x, const Tensor& gamma, double epsilon) {
  requireNpuTensors({&x, &gamma});
  requireDtypeOnChip("npu_rms_norm", x);
  const int device = x.device().index();
  auto [y, rstd] = rmsNormHost(hostOperand(x), hostOperand(gamma), epsilon);
  chargeFusedKernel(device, "npu::npu_rms_norm", perf::OperatorKind::kNormalization,
                    normWork({&x, &gamma}, {&y, &rstd}, x));
  return {deviceResult(y, device), deviceResult(rstd, device)};
}

std::tuple<Tensor, Tensor> rmsNormBackwardNpu(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                              const Tensor& rstd) {
  requireNpuTensors({&dy, &x, &gamma, &rstd});
  const int device = x.device().index();
  auto [dx, dgamma] = rmsNormBackwardHost(hostOperand(dy), hostOperand(x), hostOperand(gamma), hostOperand(rstd));
  chargeFusedKernel(device, "npu::npu_rms_norm_backward", perf::OperatorKind::kNormalization,
                    normWork({&dy, &x, &gamma, &rstd}, {&dx, &dgamma}, x));
  return {deviceResult(dx, device), deviceResult(dgamma, device)};
}

std::tuple<Tensor, Tensor, Tensor> addRmsNormNpu(const Tensor& x1, const Tensor& x2, const Tensor& gamma,
                                                 double epsilon) {
  requireChip("npu_add_rms_norm",
              {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P, ChipFamily::kAscend950});
  requireNpuTensors({&x1, &x2, &gamma});
  requireDtypeOnChip("npu_add_rms_norm", x1);
  const int device = x1.device().index();
  auto [y, rstd, x] = addRmsNormHost(hostOperand(x1), hostOperand(x2), hostOperand(gamma), epsilon);
  chargeFusedKernel(device, "npu::npu_add_rms_norm", perf::OperatorKind::kNormalization,
                    normWork({&x1, &x2, &gamma}, {&y, &rstd, &x}, x1));
  return {deviceResult(y, device), deviceResult(rstd, device), deviceResult(x, device)};
}

class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& x,
                                                const Tensor& gamma, double epsilon) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_rms_norm", "")
                         .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, double)>();
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [y, rstd] = op.call(x, gamma, epsilon);
    ctx->save_for_backward({x, gamma, rstd});
    ctx->mark_non_differentiable({rstd});
    return {y, rstd};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("npu::npu_rms_norm_backward", "")
            .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&)>();
    const auto saved = ctx->get_saved_variables();
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    auto [dx, dgamma] = op.call(grads[0], saved[0], saved[1], saved[2]);
    return {dx, dgamma, Tensor()};
  }
};

std::tuple<Tensor, Tensor> rmsNormAutograd(const Tensor& x, const Tensor& gamma, double epsilon) {
  auto outputs = RmsNormFunction::apply(x, gamma, epsilon);
  return {outputs[0], outputs[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_rms_norm", TORCH_FN(rmsNormNpu));
  m.impl("npu_rms_norm_backward", TORCH_FN(rmsNormBackwardNpu));
  m.impl("npu_add_rms_norm", TORCH_FN(addRmsNormNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_rms_norm", TORCH_FN(rmsNormHost));
  m.impl("npu_rms_norm_backward", TORCH_FN(rmsNormBackwardHost));
  m.impl("npu_add_rms_norm", TORCH_FN(addRmsNormHost));
}

TORCH_LIBRARY_IMPL(npu, Autograd, m) { m.impl("npu_rms_norm", TORCH_FN(rmsNormAutograd)); }

}  // namespace npusim::ops

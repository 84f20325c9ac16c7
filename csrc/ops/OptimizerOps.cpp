// npu_apply_adam_w and npu_apply_adam (reference §4.7), npu_bert_apply_adam
// (the ApplyAdamV2 kernel of BERT's optimizer): one fused optimizer step
// updating var, m and v in place (.out forms; the functional forms raise as in
// torch_npu). Math in fp32, written back in the tensors' dtypes.
#include <cmath>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;
using Outputs = std::tuple<Tensor&, Tensor&, Tensor&>;

void checkState(const Tensor& grad, const Tensor& var, const Tensor& m, const Tensor& v, const char* op) {
  NPU_OPS_CHECK(var.sizes().equals(grad.sizes()) && m.sizes().equals(grad.sizes()) && v.sizes().equals(grad.sizes()),
                op, ": var, m, v and grad must have the same shape, but got ", var.sizes(), ", ", m.sizes(), ", ",
                v.sizes(), " and ", grad.sizes());
  NPU_OPS_CHECK(grad.is_floating_point(), op, ": grad must be a floating tensor, but got ", grad.scalar_type());
}

void adamWHost(double beta1Power, double beta2Power, double lr, double weightDecay, double beta1, double beta2,
               double epsilon, const Tensor& grad, const OptionalTensor& maxGradNorm, bool amsgrad, bool maximize,
               const Tensor& var, const Tensor& m, const Tensor& v) {
  const Tensor g = maximize ? grad.to(at::kFloat).neg() : grad.to(at::kFloat);
  const Tensor mNew = m.to(at::kFloat) * beta1 + g * (1 - beta1);
  const Tensor vNew = v.to(at::kFloat) * beta2 + g.square() * (1 - beta2);
  // beta*_power is beta^(t-1): the kernel multiplies once more for step t.
  const double correction1 = 1 - beta1Power * beta1;
  const double correction2 = 1 - beta2Power * beta2;
  Tensor second = vNew;
  if (amsgrad) second = at::maximum(maxGradNorm->to(at::kFloat), vNew);
  const Tensor denom = at::sqrt(second / correction2) + epsilon;
  const Tensor varNew = var.to(at::kFloat) * (1 - lr * weightDecay) - lr * (mNew / correction1) / denom;
  var.copy_(varNew);
  m.copy_(mNew);
  v.copy_(vNew);
}

void adamHost(double beta1Power, double beta2Power, double lr, double beta1, double beta2, double epsilon,
              const Tensor& grad, bool nesterov, const Tensor& var, const Tensor& m, const Tensor& v) {
  // TF ApplyAdam: beta*_power is beta^t here.
  const Tensor g = grad.to(at::kFloat);
  const double lrT = lr * std::sqrt(1 - beta2Power) / (1 - beta1Power);
  const Tensor mf = m.to(at::kFloat), vf = v.to(at::kFloat);
  const Tensor mNew = mf + (g - mf) * (1 - beta1);
  const Tensor vNew = vf + (g.square() - vf) * (1 - beta2);
  const Tensor numerator = nesterov ? mNew * beta1 + g * (1 - beta1) : mNew;
  var.copy_(var.to(at::kFloat) - lrT * numerator / (at::sqrt(vNew) + epsilon));
  m.copy_(mNew);
  v.copy_(vNew);
}

// ApplyAdamV2 (adam_mode 0 "adam", 1 "mbart_adam"). The kernel tests its scalar
// switches after rounding them up to integers: gradient clipping by the global norm
// when ceil(max_grad_norm) > 0 and ceil(global_grad_norm) > 1 (adam only), weight decay
// when ceil(weight_decay) > 0. In mbart_adam mode the decay term the kernel adds is
// lr * var (its weight_decay product is overwritten before use); npusim computes what
// the kernel computes.
void bertAdamHost(double lr, double beta1, double beta2, double epsilon, const Tensor& grad, double maxGradNorm,
                  double globalGradNorm, double weightDecay, std::optional<double> stepSize, int64_t adamMode,
                  const Tensor& var, const Tensor& m, const Tensor& v) {
  const bool mbart = adamMode != 0;
  const bool decay = std::ceil(weightDecay) > 0;
  Tensor g = grad.to(at::kFloat);
  if (!mbart && std::ceil(maxGradNorm) > 0 && std::ceil(globalGradNorm) > 1) g = g * (1.0 / globalGradNorm);
  const Tensor varF = var.to(at::kFloat);
  const Tensor mNew = m.to(at::kFloat) * beta1 + g * (1 - beta1);
  const Tensor vNew = v.to(at::kFloat) * beta2 + g.square() * (1 - beta2);
  Tensor update = mNew / (at::sqrt(vNew) + epsilon);
  Tensor varNew;
  if (mbart) {
    update = update * stepSize.value_or(0.0);
    if (decay) update = update + varF * lr;
    varNew = varF - update;
  } else {
    if (decay) update = update + varF * weightDecay;
    varNew = varF - update * lr;
  }
  var.copy_(varNew);
  m.copy_(mNew);
  v.copy_(vNew);
}

perf::FusedKernelWork optimizerWork(const Tensor& grad, const Tensor& var, const Tensor& m, const Tensor& v) {
  // Reads grad, var, m, v; writes var, m, v.
  perf::FusedKernelWork work = streamingWork({&grad, &var, &m, &v}, {&var, &m, &v}, double(grad.numel()),
                                             perf::calibration::kOpsOptimizer);
  return work;
}

Outputs adamWOutImpl(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                     const at::Scalar& weightDecay, const at::Scalar& beta1, const at::Scalar& beta2,
                     const at::Scalar& epsilon, const Tensor& grad, const OptionalTensor& maxGradNorm,
                     std::optional<bool> amsgrad, std::optional<bool> maximize, Tensor& var, Tensor& m, Tensor& v,
                     bool onDevice) {
  checkState(grad, var, m, v, "npu_apply_adam_w");
  const bool useAmsgrad = amsgrad.value_or(false);
  NPU_OPS_CHECK(!useAmsgrad || maxGradNorm.has_value(), "if amsgrad is true, max_gard_norm input must be entered");
  if (!onDevice) return {var, m, v};
  requireNpuTensors({&grad, &var, &m, &v});
  requireNpuTensor(maxGradNorm);
  const int device = var.device().index();
  adamWHost(beta1Power.toDouble(), beta2Power.toDouble(), lr.toDouble(), weightDecay.toDouble(), beta1.toDouble(),
            beta2.toDouble(), epsilon.toDouble(), hostOperand(grad), hostOperand(maxGradNorm), useAmsgrad,
            maximize.value_or(false), hostOperand(var), hostOperand(m), hostOperand(v));
  perf::FusedKernelWork work = optimizerWork(grad, var, m, v);
  work.hbmBytes += bytesOf(maxGradNorm);
  chargeFusedKernel(device, "npu::npu_apply_adam_w.out", perf::OperatorKind::kOptimizerFused, work);
  return {var, m, v};
}

Outputs adamOutImpl(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                    const at::Scalar& beta1, const at::Scalar& beta2, const at::Scalar& epsilon, const Tensor& grad,
                    std::optional<bool> useLocking, std::optional<bool> useNesterov, Tensor& var, Tensor& m,
                    Tensor& v, bool onDevice) {
  checkState(grad, var, m, v, "npu_apply_adam");
  if (!onDevice) return {var, m, v};
  requireNpuTensors({&grad, &var, &m, &v});
  const int device = var.device().index();
  adamHost(beta1Power.toDouble(), beta2Power.toDouble(), lr.toDouble(), beta1.toDouble(), beta2.toDouble(),
           epsilon.toDouble(), hostOperand(grad), useNesterov.value_or(false), hostOperand(var), hostOperand(m),
           hostOperand(v));
  chargeFusedKernel(device, "npu::npu_apply_adam.out", perf::OperatorKind::kOptimizerFused,
                    optimizerWork(grad, var, m, v));
  return {var, m, v};
}

Outputs bertAdamOutImpl(const at::Scalar& lr, const at::Scalar& beta1, const at::Scalar& beta2,
                        const at::Scalar& epsilon, const Tensor& grad, const at::Scalar& maxGradNorm,
                        const at::Scalar& globalGradNorm, const at::Scalar& weightDecay,
                        const std::optional<at::Scalar>& stepSize, int64_t adamMode, Tensor& var, Tensor& m,
                        Tensor& v, bool onDevice) {
  checkState(grad, var, m, v, "npu_bert_apply_adam");
  NPU_OPS_CHECK(var.scalar_type() == at::kHalf || var.scalar_type() == at::kFloat,
                "npu_bert_apply_adam: var must be float16 or float32, but got ", var.scalar_type());
  NPU_OPS_CHECK(m.scalar_type() == var.scalar_type() && v.scalar_type() == var.scalar_type() &&
                    grad.scalar_type() == var.scalar_type(),
                "npu_bert_apply_adam: m, v and grad must have the dtype of var (", var.scalar_type(), ")");
  NPU_OPS_CHECK(adamMode == 0 || adamMode == 1, "npu_bert_apply_adam: adam_mode must be 0 (adam) or 1 (mbart_adam), "
                "but got ", adamMode);
  NPU_OPS_CHECK(adamMode == 0 || stepSize.has_value(), "npu_bert_apply_adam: adam_mode 1 (mbart_adam) needs step_size");
  if (!onDevice) return {var, m, v};
  requireNpuTensors({&grad, &var, &m, &v});
  const int device = var.device().index();
  std::optional<double> step;
  if (stepSize.has_value()) step = stepSize->toDouble();
  bertAdamHost(lr.toDouble(), beta1.toDouble(), beta2.toDouble(), epsilon.toDouble(), hostOperand(grad),
               maxGradNorm.toDouble(), globalGradNorm.toDouble(), weightDecay.toDouble(), step, adamMode,
               hostOperand(var), hostOperand(m), hostOperand(v));
  chargeFusedKernel(device, "npu::npu_bert_apply_adam.out", perf::OperatorKind::kOptimizerFused,
                    optimizerWork(grad, var, m, v));
  return {var, m, v};
}

Outputs bertAdamOutNpu(const at::Scalar& lr, const at::Scalar& beta1, const at::Scalar& beta2,
                       const at::Scalar& epsilon, const Tensor& grad, const at::Scalar& maxGradNorm,
                       const at::Scalar& globalGradNorm, const at::Scalar& weightDecay,
                       const std::optional<at::Scalar>& stepSize, int64_t adamMode, Tensor& var, Tensor& m,
                       Tensor& v) {
  return bertAdamOutImpl(lr, beta1, beta2, epsilon, grad, maxGradNorm, globalGradNorm, weightDecay, stepSize, adamMode,
                         var, m, v, true);
}
Outputs bertAdamOutMeta(const at::Scalar& lr, const at::Scalar& beta1, const at::Scalar& beta2,
                        const at::Scalar& epsilon, const Tensor& grad, const at::Scalar& maxGradNorm,
                        const at::Scalar& globalGradNorm, const at::Scalar& weightDecay,
                        const std::optional<at::Scalar>& stepSize, int64_t adamMode, Tensor& var, Tensor& m,
                        Tensor& v) {
  return bertAdamOutImpl(lr, beta1, beta2, epsilon, grad, maxGradNorm, globalGradNorm, weightDecay, stepSize, adamMode,
                         var, m, v, false);
}

Outputs adamWOutNpu(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                    const at::Scalar& weightDecay, const at::Scalar& beta1, const at::Scalar& beta2,
                    const at::Scalar& epsilon, const Tensor& grad, const OptionalTensor& maxGradNorm,
                    std::optional<bool> amsgrad, std::optional<bool> maximize, Tensor& var, Tensor& m, Tensor& v) {
  return adamWOutImpl(beta1Power, beta2Power, lr, weightDecay, beta1, beta2, epsilon, grad, maxGradNorm, amsgrad,
                      maximize, var, m, v, true);
}
Outputs adamWOutMeta(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                     const at::Scalar& weightDecay, const at::Scalar& beta1, const at::Scalar& beta2,
                     const at::Scalar& epsilon, const Tensor& grad, const OptionalTensor& maxGradNorm,
                     std::optional<bool> amsgrad, std::optional<bool> maximize, Tensor& var, Tensor& m, Tensor& v) {
  return adamWOutImpl(beta1Power, beta2Power, lr, weightDecay, beta1, beta2, epsilon, grad, maxGradNorm, amsgrad,
                      maximize, var, m, v, false);
}
Outputs adamOutNpu(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                   const at::Scalar& beta1, const at::Scalar& beta2, const at::Scalar& epsilon, const Tensor& grad,
                   std::optional<bool> useLocking, std::optional<bool> useNesterov, Tensor& var, Tensor& m, Tensor& v) {
  return adamOutImpl(beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad, useLocking, useNesterov, var, m, v,
                     true);
}
Outputs adamOutMeta(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                    const at::Scalar& beta1, const at::Scalar& beta2, const at::Scalar& epsilon, const Tensor& grad,
                    std::optional<bool> useLocking, std::optional<bool> useNesterov, Tensor& var, Tensor& m,
                    Tensor& v) {
  return adamOutImpl(beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad, useLocking, useNesterov, var, m, v,
                     false);
}

// In-place updates bump the version counters of var, m and v, so that
// autograd notices tensors it saved being overwritten (as for aten's in-place ops).
void bumpVersions(Tensor& var, Tensor& m, Tensor& v) {
  for (Tensor* t : {&var, &m, &v}) t->unsafeGetTensorImpl()->bump_version();
}

Outputs adamWOutInplaceOrView(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                              const at::Scalar& weightDecay, const at::Scalar& beta1, const at::Scalar& beta2,
                              const at::Scalar& epsilon, const Tensor& grad, const OptionalTensor& maxGradNorm,
                              std::optional<bool> amsgrad, std::optional<bool> maximize, Tensor& var, Tensor& m,
                              Tensor& v) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("npu::npu_apply_adam_w", "out")
                       .typed<Outputs(const at::Scalar&, const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                      const at::Scalar&, const at::Scalar&, const at::Scalar&, const Tensor&,
                                      const OptionalTensor&, std::optional<bool>, std::optional<bool>, Tensor&,
                                      Tensor&, Tensor&)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(beta1Power, beta2Power, lr, weightDecay, beta1, beta2, epsilon, grad, maxGradNorm, amsgrad, maximize, var,
            m, v);
  }
  bumpVersions(var, m, v);
  return {var, m, v};
}

Outputs adamOutInplaceOrView(const at::Scalar& beta1Power, const at::Scalar& beta2Power, const at::Scalar& lr,
                             const at::Scalar& beta1, const at::Scalar& beta2, const at::Scalar& epsilon,
                             const Tensor& grad, std::optional<bool> useLocking, std::optional<bool> useNesterov,
                             Tensor& var, Tensor& m, Tensor& v) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("npu::npu_apply_adam", "out")
                       .typed<Outputs(const at::Scalar&, const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                      const at::Scalar&, const at::Scalar&, const Tensor&, std::optional<bool>,
                                      std::optional<bool>, Tensor&, Tensor&, Tensor&)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad, useLocking, useNesterov, var, m, v);
  }
  bumpVersions(var, m, v);
  return {var, m, v};
}

Outputs bertAdamOutInplaceOrView(const at::Scalar& lr, const at::Scalar& beta1, const at::Scalar& beta2,
                                 const at::Scalar& epsilon, const Tensor& grad, const at::Scalar& maxGradNorm,
                                 const at::Scalar& globalGradNorm, const at::Scalar& weightDecay,
                                 const std::optional<at::Scalar>& stepSize, int64_t adamMode, Tensor& var, Tensor& m,
                                 Tensor& v) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("npu::npu_bert_apply_adam", "out")
                       .typed<Outputs(const at::Scalar&, const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                      const Tensor&, const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                      const std::optional<at::Scalar>&, int64_t, Tensor&, Tensor&, Tensor&)>();
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(lr, beta1, beta2, epsilon, grad, maxGradNorm, globalGradNorm, weightDecay, stepSize, adamMode, var, m, v);
  }
  bumpVersions(var, m, v);
  return {var, m, v};
}

// The functional forms have no aclnn kernel in torch_npu.
std::tuple<Tensor, Tensor, Tensor> adamWFunctional(const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                                   const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                                   const at::Scalar&, const Tensor&, const OptionalTensor&,
                                                   std::optional<bool>, std::optional<bool>) {
  NPU_OPS_CHECK(false, "npu_apply_adam_w is not implemented for Tensor");
  return {};
}
std::tuple<Tensor, Tensor, Tensor> adamFunctional(const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                                  const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                                  const Tensor&, std::optional<bool>, std::optional<bool>) {
  NPU_OPS_CHECK(false, "npu_apply_adam is not implemented for Tensor");
  return {};
}

std::tuple<Tensor, Tensor, Tensor> bertAdamFunctional(const at::Scalar&, const at::Scalar&, const at::Scalar&,
                                                      const at::Scalar&, const Tensor&, const at::Scalar&,
                                                      const at::Scalar&, const at::Scalar&,
                                                      const std::optional<at::Scalar>&, int64_t) {
  NPU_OPS_CHECK(false, "npu_bert_apply_adam is not implemented for Tensor");
  return {};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_bert_apply_adam", TORCH_FN(bertAdamFunctional));
  m.impl("npu_bert_apply_adam.out", TORCH_FN(bertAdamOutNpu));
  m.impl("npu_apply_adam_w", TORCH_FN(adamWFunctional));
  m.impl("npu_apply_adam_w.out", TORCH_FN(adamWOutNpu));
  m.impl("npu_apply_adam", TORCH_FN(adamFunctional));
  m.impl("npu_apply_adam.out", TORCH_FN(adamOutNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_bert_apply_adam.out", TORCH_FN(bertAdamOutMeta));
  m.impl("npu_apply_adam_w.out", TORCH_FN(adamWOutMeta));
  m.impl("npu_apply_adam.out", TORCH_FN(adamOutMeta));
}

TORCH_LIBRARY_IMPL(npu, ADInplaceOrView, m) {
  m.impl("npu_bert_apply_adam.out", TORCH_FN(bertAdamOutInplaceOrView));
  m.impl("npu_apply_adam_w.out", TORCH_FN(adamWOutInplaceOrView));
  m.impl("npu_apply_adam.out", TORCH_FN(adamOutInplaceOrView));
}

}  // namespace npusim::ops

// Smaller training operators of torch_npu, each one fused kernel:
// npu_scaled_masked_softmax (+backward, §4.9), npu_cross_entropy_loss
// (+backward, §4.10), npu_confusion_transpose (+backward, §4.11) and the
// sign-bit packing of DeepSpeed's 1-bit optimizers (§4.13).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;

template <class Signature>
c10::TypedOperatorHandle<Signature> npuOp(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

// ------------------------------------------------------------ scaled masked softmax

Tensor softmaxMask(const Tensor& x, const Tensor& mask, bool fixedTriuMask) {
  if (fixedTriuMask) {
    return at::ones({x.size(-2), x.size(-1)}, x.options().dtype(at::kBool)).triu(1);
  }
  NPU_OPS_CHECK(mask.scalar_type() == at::kBool, "npu_scaled_masked_softmax: mask must be bool, but got ",
                mask.scalar_type());
  return mask;
}

void checkSoftmaxShape(const Tensor& x) {
  NPU_OPS_CHECK(x.dim() == 4, "npu_scaled_masked_softmax: x must be 4-dimensional (viewed as NCHW), but got ",
                x.dim(), "-dimensional");
  for (int64_t d : {2, 3}) {
    NPU_OPS_CHECK(x.size(d) >= 32 && x.size(d) <= 4096 && x.size(d) % 32 == 0,
                  "npu_scaled_masked_softmax: H and W of x must be in [32, 4096] and multiples of 32, but got ",
                  x.sizes());
  }
}

Tensor scaledMaskedSoftmaxHost(const Tensor& x, const Tensor& mask, const at::Scalar& scale, bool fixedTriuMask) {
  checkSoftmaxShape(x);
  const Tensor logits = (x.to(at::kFloat) * scale.toDouble()).masked_fill(softmaxMask(x, mask, fixedTriuMask), -10000.0);
  return at::softmax(logits, -1).to(x.scalar_type());
}

Tensor scaledMaskedSoftmaxBackwardHost(const Tensor& yGrad, const Tensor& y, const Tensor& mask,
                                       const at::Scalar& scale, bool fixedTriuMask) {
  const Tensor g = yGrad.to(at::kFloat), yf = y.to(at::kFloat);
  const Tensor dx = (yf * (g - (g * yf).sum(-1, true))) * scale.toDouble();
  return dx.masked_fill(softmaxMask(y, mask, fixedTriuMask), 0.0).to(y.scalar_type());
}

Tensor scaledMaskedSoftmaxNpu(const Tensor& x, const Tensor& mask, const at::Scalar& scale, bool fixedTriuMask) {
  requireNpuTensors({&x, &mask});
  requireDtypeOnChip("npu_scaled_masked_softmax", x);
  const int device = x.device().index();
  const Tensor y = scaledMaskedSoftmaxHost(hostOperand(x), hostOperand(mask), scale, fixedTriuMask);
  chargeFusedKernel(device, "npu::npu_scaled_masked_softmax", perf::OperatorKind::kSoftmax,
                    streamingWork({&x, &mask}, {&y}, double(x.numel()), perf::calibration::kOpsSoftmax));
  return deviceResult(y, device);
}

Tensor scaledMaskedSoftmaxBackwardNpu(const Tensor& yGrad, const Tensor& y, const Tensor& mask,
                                      const at::Scalar& scale, bool fixedTriuMask) {
  requireNpuTensors({&yGrad, &y, &mask});
  const int device = y.device().index();
  const Tensor dx =
      scaledMaskedSoftmaxBackwardHost(hostOperand(yGrad), hostOperand(y), hostOperand(mask), scale, fixedTriuMask);
  chargeFusedKernel(device, "npu::npu_scaled_masked_softmax_backward", perf::OperatorKind::kSoftmax,
                    streamingWork({&yGrad, &y, &mask}, {&dx}, double(y.numel()), perf::calibration::kOpsSoftmax));
  return deviceResult(dx, device);
}

class ScaledMaskedSoftmaxFunction : public torch::autograd::Function<ScaledMaskedSoftmaxFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& mask,
                        const at::Scalar& scale, bool fixedTriuMask) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, const at::Scalar&, bool)>(
        "npu::npu_scaled_masked_softmax");
    at::AutoDispatchBelowADInplaceOrView guard;
    Tensor y = op.call(x, mask, scale, fixedTriuMask);
    ctx->save_for_backward({y, mask});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["fixed"] = fixedTriuMask;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, const Tensor&, const at::Scalar&, bool)>(
        "npu::npu_scaled_masked_softmax_backward");
    const auto saved = ctx->get_saved_variables();
    return {op.call(grads[0], saved[0], saved[1], ctx->saved_data["scale"].toScalar(),
                    ctx->saved_data["fixed"].toBool()),
            Tensor(), Tensor(), Tensor()};
  }
};

Tensor scaledMaskedSoftmaxAutograd(const Tensor& x, const Tensor& mask, const at::Scalar& scale, bool fixedTriuMask) {
  return ScaledMaskedSoftmaxFunction::apply(x, mask, scale, fixedTriuMask);
}

// ------------------------------------------------------------ cross entropy

int64_t reductionOf(c10::string_view reduction) {
  if (reduction == "none") return at::Reduction::None;
  if (reduction == "mean") return at::Reduction::Mean;
  NPU_OPS_CHECK(reduction == "sum", "npu_cross_entropy_loss: reduction must be 'none', 'mean' or 'sum', but got ",
                reduction);
  return at::Reduction::Sum;
}

using CrossEntropyResult = std::tuple<Tensor, Tensor, Tensor, Tensor>;

CrossEntropyResult crossEntropyHost(const Tensor& input, const Tensor& target, const OptionalTensor& weight,
                                    c10::string_view reduction, int64_t ignoreIndex, double labelSmoothing,
                                    double zlossScale, bool returnZloss) {
  NPU_OPS_CHECK(input.dim() == 2, "npu_cross_entropy_loss: input must be [N, C], but got ", input.sizes());
  NPU_OPS_CHECK(target.dim() == 1 && target.size(0) == input.size(0),
                "npu_cross_entropy_loss: target must be [N] with N = ", input.size(0), ", but got ", target.sizes());
  NPU_OPS_CHECK(target.scalar_type() == at::kLong, "npu_cross_entropy_loss: target must be int64, but got ",
                target.scalar_type());
  NPU_OPS_CHECK(input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16 ||
                    input.scalar_type() == at::kFloat,
                "npu_cross_entropy_loss supports float16, bfloat16 and float32, but got ", input.scalar_type());
  TORCH_CHECK(zlossScale == 0.0 && !returnZloss,
              "npu_cross_entropy_loss: zloss (lse_square_scale_for_zloss, return_zloss) is not supported yet.",
              notSupported());
  const int64_t mode = reductionOf(reduction);
  const Tensor logProbF = at::log_softmax(input.to(at::kFloat), 1);
  Tensor loss;
  if (input.is_meta()) {
    loss = at::empty(mode == at::Reduction::None ? std::vector<int64_t>{input.size(0)} : std::vector<int64_t>{1},
                     input.options().dtype(at::kFloat));
  } else {
    const OptionalTensor weightF = weight.has_value() ? OptionalTensor(weight->to(at::kFloat)) : std::nullopt;
    loss = at::cross_entropy_loss(logProbF, target, weightF, mode, ignoreIndex, labelSmoothing);
    // cross_entropy on log-probabilities equals it on logits (log_softmax is idempotent).
    if (mode != at::Reduction::None) loss = loss.reshape({1});
  }
  const Tensor empty = at::empty({0}, input.options().dtype(at::kFloat));
  return {loss.to(input.scalar_type()), logProbF.to(input.scalar_type()), empty, empty};
}

Tensor crossEntropyBackwardHost(const Tensor& gradLoss, const Tensor& logProb, const Tensor& target,
                                const OptionalTensor& weight, const OptionalTensor& gradZloss,
                                const OptionalTensor& lseForZloss, c10::string_view reduction, int64_t ignoreIndex,
                                double labelSmoothing, double zlossScale) {
  const int64_t mode = reductionOf(reduction);
  const int64_t classes = logProb.size(1);
  const Tensor p = at::exp(logProb.to(at::kFloat));
  const Tensor valid = target.ne(ignoreIndex).to(at::kFloat).unsqueeze(1);
  const Tensor safeTarget = at::where(target.ne(ignoreIndex), target, at::zeros_like(target));
  const Tensor w = weight.has_value() ? weight->to(at::kFloat) : at::ones({classes}, p.options());
  const Tensor wTarget = w.index_select(0, safeTarget).unsqueeze(1);  // [N, 1]
  const Tensor oneHot = at::one_hot(safeTarget, classes).to(at::kFloat);
  // d(-w_y log p_y)/dx = w_y (p - e_y); the smoothing term -(eps/C) sum_c w_c log p_c gives (eps/C)(p sum w - w).
  Tensor dx = (1 - labelSmoothing) * wTarget * (p - oneHot) + (labelSmoothing / classes) * (p * w.sum() - w);
  dx = dx * valid;
  Tensor g = gradLoss.to(at::kFloat);
  if (mode == at::Reduction::None) {
    dx = dx * g.reshape({-1, 1});
  } else {
    dx = dx * g.reshape({});
    if (mode == at::Reduction::Mean) dx = dx / (wTarget * valid).sum();
  }
  return dx.to(logProb.scalar_type());
}

CrossEntropyResult crossEntropyNpu(const Tensor& input, const Tensor& target, const OptionalTensor& weight,
                                   c10::string_view reduction, int64_t ignoreIndex, double labelSmoothing,
                                   double zlossScale, bool returnZloss) {
  requireChip("npu_cross_entropy_loss", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&input, &target});
  requireNpuTensor(weight);
  const int device = input.device().index();
  auto [loss, logProb, zloss, lse] = crossEntropyHost(hostOperand(input), hostOperand(target), hostOperand(weight),
                                                      reduction, ignoreIndex, labelSmoothing, zlossScale, returnZloss);
  chargeFusedKernel(device, "npu::npu_cross_entropy_loss", perf::OperatorKind::kSoftmax,
                    streamingWork({&input, &target}, {&loss, &logProb}, double(input.numel()),
                                  perf::calibration::kOpsSoftmax));
  return {deviceResult(loss, device), deviceResult(logProb, device), deviceResult(zloss, device),
          deviceResult(lse, device)};
}

Tensor crossEntropyBackwardNpu(const Tensor& gradLoss, const Tensor& logProb, const Tensor& target,
                               const OptionalTensor& weight, const OptionalTensor& gradZloss,
                               const OptionalTensor& lseForZloss, c10::string_view reduction, int64_t ignoreIndex,
                               double labelSmoothing, double zlossScale) {
  requireNpuTensors({&gradLoss, &logProb, &target});
  const int device = logProb.device().index();
  const Tensor dx = crossEntropyBackwardHost(hostOperand(gradLoss), hostOperand(logProb), hostOperand(target),
                                             hostOperand(weight), std::nullopt, std::nullopt, reduction, ignoreIndex,
                                             labelSmoothing, zlossScale);
  chargeFusedKernel(device, "npu::npu_cross_entropy_loss_backward", perf::OperatorKind::kSoftmax,
                    streamingWork({&logProb, &target}, {&dx}, double(logProb.numel()), perf::calibration::kOpsSoftmax));
  return deviceResult(dx, device);
}

class CrossEntropyFunction : public torch::autograd::Function<CrossEntropyFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& input,
                                                const Tensor& target, const OptionalTensor& weight,
                                                std::string reduction, int64_t ignoreIndex, double labelSmoothing,
                                                double zlossScale, bool returnZloss) {
    static auto op = npuOp<CrossEntropyResult(const Tensor&, const Tensor&, const OptionalTensor&, c10::string_view,
                                              int64_t, double, double, bool)>("npu::npu_cross_entropy_loss");
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [loss, logProb, zloss, lse] =
        op.call(input, target, weight, reduction, ignoreIndex, labelSmoothing, zlossScale, returnZloss);
    ctx->save_for_backward({logProb, target, weight.value_or(Tensor())});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignoreIndex;
    ctx->saved_data["label_smoothing"] = labelSmoothing;
    ctx->mark_non_differentiable({logProb, lse});
    return {loss, logProb, zloss, lse};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&,
                                  const OptionalTensor&, const OptionalTensor&, c10::string_view, int64_t, double,
                                  double)>("npu::npu_cross_entropy_loss_backward");
    const auto saved = ctx->get_saved_variables();
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    const OptionalTensor weight = saved[2].defined() ? OptionalTensor(saved[2]) : std::nullopt;
    Tensor dx = op.call(grads[0], saved[0], saved[1], weight, std::nullopt, std::nullopt,
                        ctx->saved_data["reduction"].toStringRef(), ctx->saved_data["ignore_index"].toInt(),
                        ctx->saved_data["label_smoothing"].toDouble(), 0.0);
    return {dx, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

CrossEntropyResult crossEntropyAutograd(const Tensor& input, const Tensor& target, const OptionalTensor& weight,
                                        c10::string_view reduction, int64_t ignoreIndex, double labelSmoothing,
                                        double zlossScale, bool returnZloss) {
  if (input.requires_grad()) {
    // torch_npu's restrictions on the differentiable call.
    const bool mean = reduction == "mean";
    NPU_OPS_CHECK(mean || labelSmoothing == 0.0, "npu_cross_entropy_loss: with requires_grad, reduction '",
                  reduction, "' needs label_smoothing=0.0");
    NPU_OPS_CHECK(!mean || (!weight.has_value() && ignoreIndex == -100 && labelSmoothing == 0.0),
                  "npu_cross_entropy_loss: with requires_grad and reduction 'mean', weight, ignore_index and "
                  "label_smoothing must keep their defaults");
  }
  auto outputs = CrossEntropyFunction::apply(input, target, weight, std::string(reduction), ignoreIndex,
                                             labelSmoothing, zlossScale, returnZloss);
  return {outputs[0], outputs[1], outputs[2], outputs[3]};
}

// ------------------------------------------------------------ confusion transpose

std::vector<int64_t> inversePermutation(at::IntArrayRef perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    NPU_OPS_CHECK(perm[i] >= 0 && perm[i] < static_cast<int64_t>(perm.size()),
                  "npu_confusion_transpose: perm must be a permutation, but got ", perm);
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  return inverse;
}

Tensor confusionTransposeHost(const Tensor& x, at::IntArrayRef perm, at::IntArrayRef shape, bool transposeFirst) {
  const Tensor y = transposeFirst ? x.permute(perm).reshape(shape) : x.reshape(shape).permute(perm);
  return y.contiguous().clone();
}

Tensor confusionTransposeBackwardHost(const Tensor& grad, at::IntArrayRef perm, at::IntArrayRef shape,
                                      bool transposeFirst) {
  const auto inverse = inversePermutation(perm);
  if (transposeFirst) return grad.permute(inverse).reshape(shape).contiguous().clone();
  std::vector<int64_t> permuted;
  for (int64_t p : perm) permuted.push_back(shape[p]);
  return grad.reshape(permuted).permute(inverse).contiguous().clone();
}

Tensor confusionTransposeNpu(const Tensor& x, at::IntArrayRef perm, at::IntArrayRef shape, bool transposeFirst) {
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor y = confusionTransposeHost(hostOperand(x), perm, shape, transposeFirst);
  chargeFusedKernel(device, "npu::npu_confusion_transpose", perf::OperatorKind::kDataMovement,
                    streamingWork({&x}, {&y}, double(x.numel()), 1.0));
  return deviceResult(y, device);
}

Tensor confusionTransposeBackwardNpu(const Tensor& grad, at::IntArrayRef perm, at::IntArrayRef shape,
                                     bool transposeFirst) {
  requireNpuTensors({&grad});
  const int device = grad.device().index();
  const Tensor dx = confusionTransposeBackwardHost(hostOperand(grad), perm, shape, transposeFirst);
  chargeFusedKernel(device, "npu::npu_confusion_transpose_backward", perf::OperatorKind::kDataMovement,
                    streamingWork({&grad}, {&dx}, double(grad.numel()), 1.0));
  return deviceResult(dx, device);
}

class ConfusionTransposeFunction : public torch::autograd::Function<ConfusionTransposeFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, std::vector<int64_t> perm,
                        std::vector<int64_t> shape, bool transposeFirst) {
    static auto op = npuOp<Tensor(const Tensor&, at::IntArrayRef, at::IntArrayRef, bool)>(
        "npu::npu_confusion_transpose");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->saved_data["perm"] = perm;
    ctx->saved_data["shape"] = x.sizes().vec();
    ctx->saved_data["transpose_first"] = transposeFirst;
    return op.call(x, perm, shape, transposeFirst);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, at::IntArrayRef, at::IntArrayRef, bool)>(
        "npu::npu_confusion_transpose_backward");
    const auto perm = ctx->saved_data["perm"].toIntVector();
    const auto shape = ctx->saved_data["shape"].toIntVector();
    return {op.call(grads[0], perm, shape, !ctx->saved_data["transpose_first"].toBool()), Tensor(), Tensor(),
            Tensor()};
  }
};

Tensor confusionTransposeAutograd(const Tensor& x, at::IntArrayRef perm, at::IntArrayRef shape, bool transposeFirst) {
  return ConfusionTransposeFunction::apply(x, perm.vec(), shape.vec(), transposeFirst);
}

// ------------------------------------------------------------ sign bits

Tensor signBitsPackHost(const Tensor& x, int64_t size) {
  NPU_OPS_CHECK(x.dim() == 1, "npu_sign_bits_pack: input must be 1-dimensional, but got ", x.dim(), "-dimensional");
  NPU_OPS_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kFloat,
                "npu_sign_bits_pack supports float16 and float32, but got ", x.scalar_type());
  const int64_t bytes = (x.numel() + 7) / 8;
  NPU_OPS_CHECK(size > 0 && bytes % size == 0, "npu_sign_bits_pack: size (", size,
                ") must divide the packed length ", bytes);
  // Bit 1 where x >= 0; the tail pads with -1.0 (bit 0); element 8i is bit 0 of byte i.
  const Tensor bits = at::constant_pad_nd(x.ge(0).to(at::kByte), {0, bytes * 8 - x.numel()}, 0).view({bytes, 8});
  const Tensor weights = at::pow(2, at::arange(8, x.options().dtype(at::kLong))).to(at::kByte);
  return (bits * weights).sum(1, false, at::kByte).view({size, -1});
}

Tensor signBitsUnpackHost(const Tensor& input, int64_t size, at::ScalarType dtype) {
  NPU_OPS_CHECK(input.scalar_type() == at::kByte, "npu_sign_bits_unpack: input must be uint8, but got ",
                input.scalar_type());
  NPU_OPS_CHECK(dtype == at::kHalf || dtype == at::kFloat, "npu_sign_bits_unpack: dtype must be float16 or float32, "
                "but got ", dtype);
  const int64_t elements = input.numel() * 8;
  NPU_OPS_CHECK(size > 0 && elements % size == 0, "npu_sign_bits_unpack: size (", size,
                ") must divide the unpacked length ", elements);
  const Tensor shifts = at::arange(8, input.options().dtype(at::kByte));
  const Tensor bits = input.reshape({-1, 1}).bitwise_right_shift(shifts).bitwise_and(1);
  return (bits.to(dtype) * 2 - 1).reshape({size, -1});
}

Tensor signBitsPackNpu(const Tensor& x, int64_t size) {
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor y = signBitsPackHost(hostOperand(x), size);
  chargeFusedKernel(device, "npu::npu_sign_bits_pack", perf::OperatorKind::kElementwise,
                    streamingWork({&x}, {&y}, double(x.numel()), 2.0));
  return deviceResult(y, device);
}

Tensor signBitsUnpackNpu(const Tensor& input, int64_t size, at::ScalarType dtype) {
  requireNpuTensors({&input});
  const int device = input.device().index();
  const Tensor y = signBitsUnpackHost(hostOperand(input), size, dtype);
  chargeFusedKernel(device, "npu::npu_sign_bits_unpack", perf::OperatorKind::kElementwise,
                    streamingWork({&input}, {&y}, double(y.numel()), 2.0));
  return deviceResult(y, device);
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_scaled_masked_softmax", TORCH_FN(scaledMaskedSoftmaxNpu));
  m.impl("npu_scaled_masked_softmax_backward", TORCH_FN(scaledMaskedSoftmaxBackwardNpu));
  m.impl("npu_cross_entropy_loss", TORCH_FN(crossEntropyNpu));
  m.impl("npu_cross_entropy_loss_backward", TORCH_FN(crossEntropyBackwardNpu));
  m.impl("npu_confusion_transpose", TORCH_FN(confusionTransposeNpu));
  m.impl("npu_confusion_transpose_backward", TORCH_FN(confusionTransposeBackwardNpu));
  m.impl("npu_sign_bits_pack", TORCH_FN(signBitsPackNpu));
  m.impl("npu_sign_bits_unpack", TORCH_FN(signBitsUnpackNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_scaled_masked_softmax", TORCH_FN(scaledMaskedSoftmaxHost));
  m.impl("npu_scaled_masked_softmax_backward", TORCH_FN(scaledMaskedSoftmaxBackwardHost));
  m.impl("npu_cross_entropy_loss", TORCH_FN(crossEntropyHost));
  m.impl("npu_cross_entropy_loss_backward", TORCH_FN(crossEntropyBackwardHost));
  m.impl("npu_confusion_transpose", TORCH_FN(confusionTransposeHost));
  m.impl("npu_confusion_transpose_backward", TORCH_FN(confusionTransposeBackwardHost));
  m.impl("npu_sign_bits_pack", TORCH_FN(signBitsPackHost));
  m.impl("npu_sign_bits_unpack", TORCH_FN(signBitsUnpackHost));
}

TORCH_LIBRARY_IMPL(npu, Autograd, m) {
  m.impl("npu_scaled_masked_softmax", TORCH_FN(scaledMaskedSoftmaxAutograd));
  m.impl("npu_cross_entropy_loss", TORCH_FN(crossEntropyAutograd));
  m.impl("npu_confusion_transpose", TORCH_FN(confusionTransposeAutograd));
}

}  // namespace npusim::ops

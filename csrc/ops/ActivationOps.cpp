// Gated and GELU activations of torch_npu, each one fused kernel:
// npu_swiglu (+backward, §4.4), npu_geglu (+grad, §4.8), npu_gelu and
// npu_fast_gelu (+backward, §4.12, and fast_gelu, its older name), npu_silu /
// npu_silu_ (+backward; Swish with scale 1 on the chip). Computed in fp32,
// returned in x's dtype.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
constexpr double kOpsActivation = perf::calibration::kOpsActivation;

int64_t gatedDim(const Tensor& x, int64_t dim) {
  const int64_t n = x.dim();
  NPU_OPS_CHECK_VALUE(dim >= -n && dim <= n - 1, " Expected npu_swiglu dim value ", dim, " to be in range [", -n,
                      ", ", n - 1, "] but check failed.");
  const int64_t d = dim < 0 ? dim + n : dim;
  NPU_OPS_CHECK(x.numel() > 0, "npu_swiglu: the input must not be empty");
  NPU_OPS_CHECK(x.size(d) % 2 == 0, "npu_swiglu: the size of dim ", dim, " must be even, but got ", x.size(d));
  NPU_OPS_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kFloat,
                "npu_swiglu supports float16, bfloat16 and float32, but got ", x.scalar_type());
  return d;
}

// ---- SwiGLU: silu(A) * B with A the first half along dim.
Tensor swigluHost(const Tensor& x, int64_t dim) {
  const int64_t d = gatedDim(x, dim);
  auto halves = x.to(at::kFloat).chunk(2, d);
  return (at::silu(halves[0]) * halves[1]).to(x.scalar_type());
}

Tensor swigluBackwardHost(const Tensor& grad, const Tensor& x, int64_t dim) {
  const int64_t d = gatedDim(x, dim);
  auto halves = x.to(at::kFloat).chunk(2, d);
  const Tensor& a = halves[0];
  const Tensor& b = halves[1];
  const Tensor g = grad.to(at::kFloat);
  const Tensor sig = at::sigmoid(a);
  const Tensor da = g * b * sig * (1 + a * (1 - sig));
  const Tensor db = g * a * sig;
  return at::cat({da, db}, d).to(x.scalar_type());
}

// ---- GeGLU: approximate 0 = erf, 1 = tanh; activate_left chooses the gelu side.
c10::string_view geluMode(int64_t approximate) {
  NPU_OPS_CHECK_VALUE(approximate == 0 || approximate == 1, "npu_geglu: approximate must be 0 or 1, but got ",
                      approximate);
  return approximate == 1 ? "tanh" : "none";
}

std::tuple<Tensor, Tensor> gegluHost(const Tensor& x, int64_t dim, int64_t approximate, bool activateLeft) {
  const int64_t d = gatedDim(x, dim);
  auto halves = x.to(at::kFloat).chunk(2, d);
  const Tensor& gated = activateLeft ? halves[0] : halves[1];
  const Tensor& other = activateLeft ? halves[1] : halves[0];
  const Tensor gelu = at::gelu(gated, geluMode(approximate));
  return {(other * gelu).to(x.scalar_type()), gelu.to(x.scalar_type())};
}

Tensor gegluGradHost(const Tensor& grad, const Tensor& x, const Tensor& gelu, int64_t dim, int64_t approximate,
                     bool activateLeft) {
  const int64_t d = gatedDim(x, dim);
  auto halves = x.to(at::kFloat).chunk(2, d);
  const Tensor& gated = activateLeft ? halves[0] : halves[1];
  const Tensor& other = activateLeft ? halves[1] : halves[0];
  const Tensor g = grad.to(at::kFloat);
  const Tensor dOther = g * gelu.to(at::kFloat);
  const Tensor dGated = at::gelu_backward(g * other, gated, geluMode(approximate));
  return (activateLeft ? at::cat({dGated, dOther}, d) : at::cat({dOther, dGated}, d)).to(x.scalar_type());
}

// ---- GELU and fast GELU (x * sigmoid(1.702 x)).
c10::string_view checkedGeluMode(c10::string_view approximate) {
  NPU_OPS_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                      "npu_gelu: approximate must be 'none' or 'tanh', but got ", approximate);
  return approximate;
}

Tensor geluHost(const Tensor& x, c10::string_view approximate) {
  return at::gelu(x.to(at::kFloat), checkedGeluMode(approximate)).to(x.scalar_type());
}

Tensor geluBackwardHost(const Tensor& grad, const Tensor& x, c10::string_view approximate) {
  return at::gelu_backward(grad.to(at::kFloat), x.to(at::kFloat), checkedGeluMode(approximate))
      .to(x.scalar_type());
}

constexpr double kFastGeluAlpha = 1.702;

Tensor fastGeluHost(const Tensor& x) {
  const Tensor xf = x.to(at::kFloat);
  return (xf * at::sigmoid(kFastGeluAlpha * xf)).to(x.scalar_type());
}

Tensor fastGeluBackwardHost(const Tensor& grad, const Tensor& x) {
  const Tensor xf = x.to(at::kFloat);
  const Tensor sig = at::sigmoid(kFastGeluAlpha * xf);
  return (grad.to(at::kFloat) * (sig + kFastGeluAlpha * xf * sig * (1 - sig))).to(x.scalar_type());
}

// ---- SiLU (Swish, scale 1): x * sigmoid(x); the gradient reads x and the forward result.
void requireSiluDtype(const char* op, const Tensor& x) {
  NPU_OPS_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16,
                op, " supports float16, bfloat16 and float32, but got ", x.scalar_type());
}

Tensor siluHost(const Tensor& x) {
  requireSiluDtype("npu_silu", x);
  return at::silu(x.to(at::kFloat)).to(x.scalar_type());
}

Tensor siluBackwardHost(const Tensor& grad, const Tensor& x, const Tensor& y) {
  requireSiluDtype("npu_silu_backward", x);
  NPU_OPS_CHECK(grad.sizes().equals(x.sizes()) && y.sizes().equals(x.sizes()),
                "npu_silu_backward: grad_output, x0 and x1 must have the same shape, but got ", grad.sizes(), ", ",
                x.sizes(), " and ", y.sizes());
  const Tensor sig = at::sigmoid(x.to(at::kFloat));
  // d/dx (x * sigmoid(x)) = sigmoid(x) + y * (1 - sigmoid(x)), y the forward result (SwishGrad's x1).
  return (grad.to(at::kFloat) * (sig + y.to(at::kFloat) * (1 - sig))).to(x.scalar_type());
}

// ---- device kernels
Tensor swigluNpu(const Tensor& x, int64_t dim) {
  requireChip("npu_swiglu", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor out = swigluHost(hostOperand(x), dim);
  chargeFusedKernel(device, "npu::npu_swiglu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&out}, double(x.numel()), kOpsActivation));
  return deviceResult(out, device);
}

Tensor swigluBackwardNpu(const Tensor& grad, const Tensor& x, int64_t dim) {
  requireChip("npu_swiglu_backward", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&grad, &x});
  const int device = x.device().index();
  const Tensor dx = swigluBackwardHost(hostOperand(grad), hostOperand(x), dim);
  chargeFusedKernel(device, "npu::npu_swiglu_backward", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x}, {&dx}, double(x.numel()), 2 * kOpsActivation));
  return deviceResult(dx, device);
}

std::tuple<Tensor, Tensor> gegluNpu(const Tensor& x, int64_t dim, int64_t approximate, bool activateLeft) {
  requireNpuTensors({&x});
  requireDtypeOnChip("npu_geglu", x);
  const int device = x.device().index();
  auto [y, gelu] = gegluHost(hostOperand(x), dim, approximate, activateLeft);
  chargeFusedKernel(device, "npu::npu_geglu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&y, &gelu}, double(x.numel()), kOpsActivation));
  return {deviceResult(y, device), deviceResult(gelu, device)};
}

Tensor gegluGradNpu(const Tensor& grad, const Tensor& x, const Tensor& gelu, int64_t dim, int64_t approximate,
                    bool activateLeft) {
  requireNpuTensors({&grad, &x, &gelu});
  const int device = x.device().index();
  const Tensor dx = gegluGradHost(hostOperand(grad), hostOperand(x), hostOperand(gelu), dim, approximate,
                                  activateLeft);
  chargeFusedKernel(device, "npu::npu_geglu_grad", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x, &gelu}, {&dx}, double(x.numel()), 2 * kOpsActivation));
  return deviceResult(dx, device);
}

Tensor geluNpu(const Tensor& x, c10::string_view approximate) {
  requireChip("npu_gelu", {ChipFamily::kAscend910A, ChipFamily::kAscend310P, ChipFamily::kAtlasA2,
                           ChipFamily::kAtlasA3});
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor out = geluHost(hostOperand(x), approximate);
  chargeFusedKernel(device, "npu::npu_gelu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&out}, double(x.numel()), kOpsActivation));
  return deviceResult(out, device);
}

Tensor geluBackwardNpu(const Tensor& grad, const Tensor& x, c10::string_view approximate) {
  requireNpuTensors({&grad, &x});
  const int device = x.device().index();
  const Tensor dx = geluBackwardHost(hostOperand(grad), hostOperand(x), approximate);
  chargeFusedKernel(device, "npu::npu_gelu_backward", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x}, {&dx}, double(x.numel()), kOpsActivation));
  return deviceResult(dx, device);
}

Tensor fastGeluNpu(const Tensor& x) {
  requireChip("npu_fast_gelu", {ChipFamily::kAscend910A, ChipFamily::kAscend310P, ChipFamily::kAtlasA2,
                                ChipFamily::kAtlasA3});
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor out = fastGeluHost(hostOperand(x));
  chargeFusedKernel(device, "npu::npu_fast_gelu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&out}, double(x.numel()), kOpsActivation));
  return deviceResult(out, device);
}

Tensor fastGeluBackwardNpu(const Tensor& grad, const Tensor& x) {
  requireNpuTensors({&grad, &x});
  const int device = x.device().index();
  const Tensor dx = fastGeluBackwardHost(hostOperand(grad), hostOperand(x));
  chargeFusedKernel(device, "npu::npu_fast_gelu_backward", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x}, {&dx}, double(x.numel()), kOpsActivation));
  return deviceResult(dx, device);
}

// fast_gelu: the same kernel as npu_fast_gelu, launched under its own name.
Tensor fastGeluAliasNpu(const Tensor& x) {
  requireChip("fast_gelu", {ChipFamily::kAscend910A, ChipFamily::kAscend310P, ChipFamily::kAtlasA2,
                            ChipFamily::kAtlasA3});
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor out = fastGeluHost(hostOperand(x));
  chargeFusedKernel(device, "npu::fast_gelu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&out}, double(x.numel()), kOpsActivation));
  return deviceResult(out, device);
}

Tensor siluNpu(const Tensor& x) {
  requireNpuTensors({&x});
  const int device = x.device().index();
  const Tensor out = siluHost(hostOperand(x));
  chargeFusedKernel(device, "npu::npu_silu", perf::OperatorKind::kActivation,
                    streamingWork({&x}, {&out}, double(x.numel()), kOpsActivation));
  return deviceResult(out, device);
}

// In place: the kernel writes its result over self's device memory (any strides: the host
// alias has self's layout).
Tensor& siluInplaceNpu(Tensor& self) {
  requireNpuTensors({&self});
  const int device = self.device().index();
  const Tensor host = hostOperand(self);
  host.copy_(siluHost(host));
  chargeFusedKernel(device, "npu::npu_silu_", perf::OperatorKind::kActivation,
                    streamingWork({&self}, {&self}, double(self.numel()), kOpsActivation));
  return self;
}

Tensor& siluInplaceMeta(Tensor& self) {
  requireSiluDtype("npu_silu_", self);
  return self;
}

Tensor siluBackwardNpu(const Tensor& grad, const Tensor& x, const Tensor& y) {
  requireNpuTensors({&grad, &x, &y});
  const int device = x.device().index();
  const Tensor dx = siluBackwardHost(hostOperand(grad), hostOperand(x), hostOperand(y));
  chargeFusedKernel(device, "npu::npu_silu_backward", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x, &y}, {&dx}, double(x.numel()), kOpsActivation));
  return deviceResult(dx, device);
}

// ---- autograd
template <class Signature>
c10::TypedOperatorHandle<Signature> npuOp(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

class SwigluFunction : public torch::autograd::Function<SwigluFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t dim) {
    static auto op = npuOp<Tensor(const Tensor&, int64_t)>("npu::npu_swiglu");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    ctx->saved_data["dim"] = dim;
    return op.call(x, dim);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, int64_t)>("npu::npu_swiglu_backward");
    return {op.call(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["dim"].toInt()), Tensor()};
  }
};

class GegluFunction : public torch::autograd::Function<GegluFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t dim,
                                                int64_t approximate, bool activateLeft) {
    static auto op = npuOp<std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool)>("npu::npu_geglu");
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [y, gelu] = op.call(x, dim, approximate, activateLeft);
    ctx->save_for_backward({x, gelu});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["approximate"] = approximate;
    ctx->saved_data["activate_left"] = activateLeft;
    ctx->mark_non_differentiable({gelu});
    return {y, gelu};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t, int64_t, bool)>(
        "npu::npu_geglu_grad");
    const auto saved = ctx->get_saved_variables();
    return {op.call(grads[0], saved[0], saved[1], ctx->saved_data["dim"].toInt(),
                    ctx->saved_data["approximate"].toInt(), ctx->saved_data["activate_left"].toBool()),
            Tensor(), Tensor(), Tensor()};
  }
};

class GeluFunction : public torch::autograd::Function<GeluFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, std::string approximate) {
    static auto op = npuOp<Tensor(const Tensor&, c10::string_view)>("npu::npu_gelu");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = approximate;
    return op.call(x, approximate);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, c10::string_view)>("npu::npu_gelu_backward");
    return {op.call(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["approximate"].toStringRef()),
            Tensor()};
  }
};

class FastGeluFunction : public torch::autograd::Function<FastGeluFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x) {
    static auto op = npuOp<Tensor(const Tensor&)>("npu::npu_fast_gelu");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    return op.call(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&)>("npu::npu_fast_gelu_backward");
    return {op.call(grads[0], ctx->get_saved_variables()[0])};
  }
};

class FastGeluAliasFunction : public torch::autograd::Function<FastGeluAliasFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x) {
    static auto op = npuOp<Tensor(const Tensor&)>("npu::fast_gelu");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    return op.call(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&)>("npu::npu_fast_gelu_backward");
    return {op.call(grads[0], ctx->get_saved_variables()[0])};
  }
};

class SiluFunction : public torch::autograd::Function<SiluFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x) {
    static auto op = npuOp<Tensor(const Tensor&)>("npu::npu_silu");
    at::AutoDispatchBelowADInplaceOrView guard;
    Tensor y = op.call(x);
    ctx->save_for_backward({x, y});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = npuOp<Tensor(const Tensor&, const Tensor&, const Tensor&)>("npu::npu_silu_backward");
    const auto saved = ctx->get_saved_variables();
    return {op.call(grads[0], saved[0], saved[1])};
  }
};

Tensor& siluInplaceOrView(Tensor& self) {
  static auto op = npuOp<Tensor&(Tensor&)>("npu::npu_silu_");
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(self);
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

Tensor swigluAutograd(const Tensor& x, int64_t dim) { return SwigluFunction::apply(x, dim); }
std::tuple<Tensor, Tensor> gegluAutograd(const Tensor& x, int64_t dim, int64_t approximate, bool activateLeft) {
  auto outputs = GegluFunction::apply(x, dim, approximate, activateLeft);
  return {outputs[0], outputs[1]};
}
Tensor geluAutograd(const Tensor& x, c10::string_view approximate) {
  return GeluFunction::apply(x, std::string(approximate));
}
Tensor fastGeluAutograd(const Tensor& x) { return FastGeluFunction::apply(x); }
Tensor fastGeluAliasAutograd(const Tensor& x) { return FastGeluAliasFunction::apply(x); }
Tensor siluAutograd(const Tensor& x) { return SiluFunction::apply(x); }

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_swiglu", TORCH_FN(swigluNpu));
  m.impl("npu_swiglu_backward", TORCH_FN(swigluBackwardNpu));
  m.impl("npu_geglu", TORCH_FN(gegluNpu));
  m.impl("npu_geglu_grad", TORCH_FN(gegluGradNpu));
  m.impl("npu_gelu", TORCH_FN(geluNpu));
  m.impl("npu_gelu_backward", TORCH_FN(geluBackwardNpu));
  m.impl("npu_fast_gelu", TORCH_FN(fastGeluNpu));
  m.impl("npu_fast_gelu_backward", TORCH_FN(fastGeluBackwardNpu));
  m.impl("fast_gelu", TORCH_FN(fastGeluAliasNpu));
  m.impl("npu_silu", TORCH_FN(siluNpu));
  m.impl("npu_silu_", TORCH_FN(siluInplaceNpu));
  m.impl("npu_silu_backward", TORCH_FN(siluBackwardNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_swiglu", TORCH_FN(swigluHost));
  m.impl("npu_swiglu_backward", TORCH_FN(swigluBackwardHost));
  m.impl("npu_geglu", TORCH_FN(gegluHost));
  m.impl("npu_geglu_grad", TORCH_FN(gegluGradHost));
  m.impl("npu_gelu", TORCH_FN(geluHost));
  m.impl("npu_gelu_backward", TORCH_FN(geluBackwardHost));
  m.impl("npu_fast_gelu", TORCH_FN(fastGeluHost));
  m.impl("npu_fast_gelu_backward", TORCH_FN(fastGeluBackwardHost));
  m.impl("fast_gelu", TORCH_FN(fastGeluHost));
  m.impl("npu_silu", TORCH_FN(siluHost));
  m.impl("npu_silu_", TORCH_FN(siluInplaceMeta));
  m.impl("npu_silu_backward", TORCH_FN(siluBackwardHost));
}

TORCH_LIBRARY_IMPL(npu, ADInplaceOrView, m) { m.impl("npu_silu_", TORCH_FN(siluInplaceOrView)); }

TORCH_LIBRARY_IMPL(npu, Autograd, m) {
  m.impl("npu_swiglu", TORCH_FN(swigluAutograd));
  m.impl("npu_geglu", TORCH_FN(gegluAutograd));
  m.impl("npu_gelu", TORCH_FN(geluAutograd));
  m.impl("npu_fast_gelu", TORCH_FN(fastGeluAutograd));
  m.impl("fast_gelu", TORCH_FN(fastGeluAliasAutograd));
  m.impl("npu_silu", TORCH_FN(siluAutograd));
}

}  // namespace npusim::ops

// npu_rotary_mul and npu_rotary_mul_backward (reference §4.3): out = x*cos +
// rot(x)*sin in "half" (rotate_half) or "interleave" pairs, or with an explicit
// rotation matrix; and npu_mrope (§5.7): RoPE from a cos/sin cache indexed by
// positions, with Qwen2-VL's multimodal sections. One fused kernel each.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/KernelSupport.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;

constexpr double kOpsRotary = 4.0;  // two multiplies, an add and the rotation per element

bool interleaved(c10::string_view mode) {
  NPU_OPS_CHECK(mode == "half" || mode == "interleave",
                "The rotary_mode of npu_rotary_mul should be half or interleave, but got ", mode);
  return mode == "interleave";
}

// rot(x): half (x1, x2) -> (-x2, x1); interleave (a, b) -> (-b, a) per pair.
Tensor rotate(const Tensor& x, bool pairs) {
  if (!pairs) {
    auto halves = x.chunk(2, -1);
    return at::cat({halves[1].neg(), halves[0]}, -1);
  }
  const Tensor even = x.slice(-1, 0, x.size(-1), 2), odd = x.slice(-1, 1, x.size(-1), 2);
  return at::stack({odd.neg(), even}, -1).flatten(-2);
}

// The transpose of rot: half (y1, y2) -> (y2, -y1); interleave (a, b) -> (b, -a).
Tensor rotateTransposed(const Tensor& y, bool pairs) {
  if (!pairs) {
    auto halves = y.chunk(2, -1);
    return at::cat({halves[1], halves[0].neg()}, -1);
  }
  const Tensor even = y.slice(-1, 0, y.size(-1), 2), odd = y.slice(-1, 1, y.size(-1), 2);
  return at::stack({odd, even.neg()}, -1).flatten(-2);
}

void checkShapes(const Tensor& x, const Tensor& r1, const Tensor& r2) {
  NPU_OPS_CHECK(x.dim() == 3 || x.dim() == 4, "npu_rotary_mul: the input should be 3 or 4 dimensional, but got ",
                x.dim(), "-dimensional");
  NPU_OPS_CHECK(x.size(-1) % 2 == 0, "npu_rotary_mul: the last dimension of the input must be even, but got ",
                x.size(-1));
  NPU_OPS_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kFloat,
                "npu_rotary_mul supports float16, bfloat16 and float32, but got ", x.scalar_type());
  NPU_OPS_CHECK(r1.sizes().equals(r2.sizes()), "npu_rotary_mul: r1 and r2 must have the same shape, but got ",
                r1.sizes(), " and ", r2.sizes());
  NPU_OPS_CHECK(r1.dim() == x.dim() && r1.size(-1) == x.size(-1),
                "npu_rotary_mul: r1 and r2 must broadcast to the input ", x.sizes(), ", but got ", r1.sizes());
}

Tensor rotaryMulHost(const Tensor& x, const Tensor& r1, const Tensor& r2, c10::string_view mode,
                     const OptionalTensor& rotateMatrix) {
  checkShapes(x, r1, r2);
  const bool pairs = interleaved(mode);
  // r1/r2 of another dtype are cast to x's first, as the kernel wrapper does.
  const Tensor cos = r1.to(x.scalar_type()).to(at::kFloat), sin = r2.to(x.scalar_type()).to(at::kFloat);
  const Tensor xf = x.to(at::kFloat);
  const Tensor rotated = rotateMatrix.has_value() ? at::matmul(xf, rotateMatrix->to(at::kFloat)) : rotate(xf, pairs);
  return (xf * cos + rotated * sin).to(x.scalar_type());
}

std::tuple<Tensor, Tensor, Tensor> rotaryMulBackwardHost(const Tensor& grad, const Tensor& x, const Tensor& r1,
                                                         const Tensor& r2, c10::string_view mode) {
  checkShapes(x, r1, r2);
  const bool pairs = interleaved(mode);
  const Tensor g = grad.to(at::kFloat), xf = x.to(at::kFloat);
  const Tensor cos = r1.to(at::kFloat), sin = r2.to(at::kFloat);
  const Tensor dx = g * cos + rotateTransposed(g * sin, pairs);
  const Tensor dr1 = at::sum_to(g * xf, r1.sizes());
  const Tensor dr2 = at::sum_to(g * rotate(xf, pairs), r2.sizes());
  return {dx.to(x.scalar_type()), dr1.to(r1.scalar_type()), dr2.to(r2.scalar_type())};
}

Tensor rotaryMulNpu(const Tensor& x, const Tensor& r1, const Tensor& r2, c10::string_view mode,
                    const OptionalTensor& rotateMatrix) {
  requireNpuTensors({&x, &r1, &r2});
  requireNpuTensor(rotateMatrix);
  requireDtypeOnChip("npu_rotary_mul", x);
  if (chipFamily() == ChipFamily::kAscend910A) {
    NPU_OPS_CHECK(mode == "half" && x.dim() == 4 && x.size(-1) == 128,
                  "npu_rotary_mul on Ascend910A supports rotary_mode half with 4-dimensional input and D = 128 "
                  "only, but got ",
                  mode, " with input ", x.sizes());
  }
  const int device = x.device().index();
  const Tensor out = rotaryMulHost(hostOperand(x), hostOperand(r1), hostOperand(r2), mode, hostOperand(rotateMatrix));
  chargeFusedKernel(device, "npu::npu_rotary_mul", perf::OperatorKind::kActivation,
                    streamingWork({&x, &r1, &r2}, {&out}, double(x.numel()), kOpsRotary));
  return deviceResult(out, device);
}

std::tuple<Tensor, Tensor, Tensor> rotaryMulBackwardNpu(const Tensor& grad, const Tensor& x, const Tensor& r1,
                                                        const Tensor& r2, c10::string_view mode) {
  requireNpuTensors({&grad, &x, &r1, &r2});
  const int device = x.device().index();
  auto [dx, dr1, dr2] =
      rotaryMulBackwardHost(hostOperand(grad), hostOperand(x), hostOperand(r1), hostOperand(r2), mode);
  chargeFusedKernel(device, "npu::npu_rotary_mul_backward", perf::OperatorKind::kActivation,
                    streamingWork({&grad, &x, &r1, &r2}, {&dx, &dr1, &dr2}, double(x.numel()), 2 * kOpsRotary));
  return {deviceResult(dx, device), deviceResult(dr1, device), deviceResult(dr2, device)};
}

class RotaryMulFunction : public torch::autograd::Function<RotaryMulFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& r1, const Tensor& r2,
                        std::string mode, const OptionalTensor& rotateMatrix) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_rotary_mul", "")
                         .typed<Tensor(const Tensor&, const Tensor&, const Tensor&, c10::string_view,
                                       const OptionalTensor&)>();
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x, r1, r2});
    ctx->saved_data["mode"] = mode;
    ctx->saved_data["rotate"] = rotateMatrix.has_value();
    return op.call(x, r1, r2, mode, rotateMatrix);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_rotary_mul_backward", "")
                         .typed<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                   const Tensor&, c10::string_view)>();
    // The rotation-matrix form has no backward in torch_npu.
    TORCH_CHECK(!ctx->saved_data["rotate"].toBool(),
                "npu_rotary_mul with a rotate matrix has no backward (derivatives.yaml lists none).", notSupported());
    const auto saved = ctx->get_saved_variables();
    auto [dx, dr1, dr2] = op.call(grads[0], saved[0], saved[1], saved[2], ctx->saved_data["mode"].toStringRef());
    return {dx, dr1, dr2, Tensor(), Tensor()};
  }
};

Tensor rotaryMulAutograd(const Tensor& x, const Tensor& r1, const Tensor& r2, c10::string_view mode,
                         const OptionalTensor& rotateMatrix) {
  return RotaryMulFunction::apply(x, r1, r2, std::string(mode), rotateMatrix);
}

// ---- npu_mrope

// RoPE on the first rotary_dim features of each head of x [T, heads * head_size],
// with cos/sin [T, rotary_dim / 2] (vLLM's rotary embedding formulation).
Tensor ropeWithCache(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t headSize, bool pairs) {
  const int64_t tokens = x.size(0);
  NPU_OPS_CHECK(x.dim() == 2 && x.size(1) % headSize == 0, "npu_mrope: query and key must be [T, heads * ",
                headSize, "], but got ", x.sizes());
  const Tensor heads = x.to(at::kFloat).view({tokens, -1, headSize});
  const int64_t rotaryDim = cos.size(-1) * 2;
  const Tensor rot = heads.slice(-1, 0, rotaryDim);
  const Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  Tensor rotated;
  if (!pairs) {
    auto halves = rot.chunk(2, -1);
    rotated = at::cat({halves[0] * c - halves[1] * s, halves[1] * c + halves[0] * s}, -1);
  } else {
    const Tensor even = rot.slice(-1, 0, rotaryDim, 2), odd = rot.slice(-1, 1, rotaryDim, 2);
    rotated = at::stack({even * c - odd * s, odd * c + even * s}, -1).flatten(-2);
  }
  return at::cat({rotated, heads.slice(-1, rotaryDim)}, -1).view(x.sizes()).to(x.scalar_type());
}

std::tuple<Tensor, Tensor> mropeHost(const Tensor& positions, const Tensor& query, const Tensor& key,
                                     const Tensor& cosSinCache, int64_t headSize, at::OptionalIntArrayRef mropeSection,
                                     std::optional<c10::string_view> rotaryMode,
                                     std::optional<c10::string_view> cacheMode) {
  const bool pairs = interleaved(rotaryMode.value_or("half"));
  NPU_OPS_CHECK(cacheMode.value_or("default") == "default", "npu_mrope: cache_mode ", cacheMode.value_or(""),
                " is not supported by npusim");
  NPU_OPS_CHECK(cosSinCache.dim() == 2 && cosSinCache.size(1) % 2 == 0 && cosSinCache.size(1) <= headSize,
                "npu_mrope: cos_sin_cache must be [max_position, rotary_dim] with rotary_dim even and <= head_size, "
                "but got ", cosSinCache.sizes());
  const Tensor table = cosSinCache.to(at::kFloat).index_select(0, positions.reshape(-1).to(at::kLong));
  Tensor cos = table.slice(-1, 0, cosSinCache.size(1) / 2), sin = table.slice(-1, cosSinCache.size(1) / 2);
  if (positions.dim() == 2) {
    // Multimodal RoPE: section i of the frequencies follows position stream i.
    NPU_OPS_CHECK(mropeSection.has_value(), "npu_mrope: 2-dimensional positions need mrope_section");
    const int64_t streams = positions.size(0), tokens = positions.size(1);
    int64_t total = 0;
    for (int64_t section : *mropeSection) total += section;
    NPU_OPS_CHECK(static_cast<int64_t>(mropeSection->size()) <= streams && total == cos.size(-1),
                  "npu_mrope: mrope_section ", *mropeSection, " must have at most ", streams,
                  " sections summing to rotary_dim / 2 = ", cos.size(-1));
    auto pick = [&](const Tensor& t) {
      const Tensor perStream = t.view({streams, tokens, -1});
      std::vector<Tensor> parts;
      int64_t start = 0;
      for (size_t i = 0; i < mropeSection->size(); ++i) {
        parts.push_back(perStream[static_cast<int64_t>(i)].slice(-1, start, start + (*mropeSection)[i]));
        start += (*mropeSection)[i];
      }
      return at::cat(parts, -1);
    };
    cos = pick(cos);
    sin = pick(sin);
  }
  return {ropeWithCache(query, cos, sin, headSize, pairs), ropeWithCache(key, cos, sin, headSize, pairs)};
}

std::tuple<Tensor, Tensor> mropeNpu(const Tensor& positions, const Tensor& query, const Tensor& key,
                                    const Tensor& cosSinCache, int64_t headSize, at::OptionalIntArrayRef mropeSection,
                                    std::optional<c10::string_view> rotaryMode,
                                    std::optional<c10::string_view> cacheMode) {
  requireChip("npu_mrope", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&positions, &query, &key, &cosSinCache});
  const int device = query.device().index();
  auto [q, k] = mropeHost(hostOperand(positions), hostOperand(query), hostOperand(key), hostOperand(cosSinCache),
                          headSize, mropeSection, rotaryMode, cacheMode);
  perf::FusedKernelWork work = streamingWork({&positions, &query, &key}, {&q, &k},
                                             double(query.numel() + key.numel()), kOpsRotary);
  work.hbmBytes += double(positions.numel()) * double(cosSinCache.size(1)) * double(cosSinCache.element_size());
  chargeFusedKernel(device, "npu::npu_mrope", perf::OperatorKind::kActivation, work);
  return {deviceResult(q, device), deviceResult(k, device)};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_mrope", TORCH_FN(mropeNpu));
  m.impl("npu_rotary_mul", TORCH_FN(rotaryMulNpu));
  m.impl("npu_rotary_mul_backward", TORCH_FN(rotaryMulBackwardNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_mrope", TORCH_FN(mropeHost));
  m.impl("npu_rotary_mul", TORCH_FN(rotaryMulHost));
  m.impl("npu_rotary_mul_backward", TORCH_FN(rotaryMulBackwardHost));
}

TORCH_LIBRARY_IMPL(npu, Autograd, m) { m.impl("npu_rotary_mul", TORCH_FN(rotaryMulAutograd)); }

}  // namespace npusim::ops

// Losses that the chip computes with fp32 internal precision for fp16 and
// bf16 inputs: the aclnn kernels read half values, compute in float and round
// the result once. PyTorch's composite binary_cross_entropy_with_logits would
// round after every step (exp, log1p, products) in half precision instead.
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/binary_cross_entropy_with_logits_native.h>
#include <torch/library.h>

namespace npusim::backend {
namespace {

bool isReducedFloat(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

std::optional<at::Tensor> toFloat(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) return t;
  return isReducedFloat(*t) ? std::optional<at::Tensor>(t->to(at::kFloat)) : t;
}

at::Tensor bceWithLogits(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                         const std::optional<at::Tensor>& posWeight, int64_t reduction) {
  if (!isReducedFloat(self)) {
    return at::native::binary_cross_entropy_with_logits(self, target, weight, posWeight, reduction);
  }
  const at::Tensor result = at::native::binary_cross_entropy_with_logits(
      self.to(at::kFloat), isReducedFloat(target) ? target.to(at::kFloat) : target, toFloat(weight), toFloat(posWeight),
      reduction);
  return result.to(self.scalar_type());
}

}  // namespace

// Below autograd: the derivative formula still applies to the npu result.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("binary_cross_entropy_with_logits", TORCH_FN(bceWithLogits));
}

}  // namespace npusim::backend

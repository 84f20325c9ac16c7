// Dropout on npu (native_dropout) draws its mask from the npu generator.
//
// native_dropout has no generator argument: its CPU kernel draws from the
// *CPU* default generator, so run as it is by the operator executor it would
// ignore torch.npu.manual_seed (two seeded runs would differ, and an NPUGraph
// replay could not draw what eager mode draws). The real stack draws the mask
// from the npu generator (torch_npu's dropout gen-mask kernel). Here the steps
// of PyTorch's CPU kernel run as npu operators: an npu bernoulli_ (which draws
// from the npu generator's CPU state, so an npu and a CPU run seeded alike
// keep drawing the same numbers), then the scaling multiplications.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace npusim::backend {
namespace {

std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input, input.options())};
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double keep = 1. - p;
  // A probability of zero keeps nothing: no division by zero, no NaN.
  const double scale = keep == 0 ? 0. : 1. / keep;
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  mask.bernoulli_(keep);  // the npu generator (default of the input's device)
  at::Tensor output = input.mul(mask).mul_(scale);
  return {output, mask};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("native_dropout", &nativeDropout); }

}  // namespace npusim::backend

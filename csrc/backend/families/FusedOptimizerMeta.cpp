// Meta kernels for the fused optimizers PyTorch ships without one
// (_fused_sgd_, _fused_adagrad_), so that `SGD(fused=True)` and
// `Adagrad(fused=True)` run in estimate-only mode like the fused Adam(W),
// whose Meta kernels PyTorch provides. The kernels write their arguments in
// place and return nothing: a Meta kernel only checks the lists agree.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

namespace npusim::backend {
namespace {

void checkListSizes(const char* name, at::TensorList params, at::TensorList grads, at::TensorList state) {
  TORCH_CHECK(params.size() == grads.size(), name, ": expected as many gradients as parameters, got ", grads.size(),
              " for ", params.size());
  // SGD without momentum passes an empty momentum buffer list.
  TORCH_CHECK(state.empty() || state.size() == params.size(), name, ": expected as many state tensors as parameters, got ",
              state.size(), " for ", params.size());
}

void fusedSgdMeta(at::TensorList self, at::TensorList grads, at::TensorList momentumBuffers, double, double, double,
                  double, bool, bool, bool, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&) {
  checkListSizes("_fused_sgd_", self, grads, momentumBuffers);
}

void fusedSgdTensorLrMeta(at::TensorList self, at::TensorList grads, at::TensorList momentumBuffers, double, double,
                          const at::Tensor&, double, bool, bool, bool, const std::optional<at::Tensor>&,
                          const std::optional<at::Tensor>&) {
  checkListSizes("_fused_sgd_", self, grads, momentumBuffers);
}

void fusedAdagradMeta(at::TensorList self, at::TensorList grads, at::TensorList stateSums, at::TensorList stateSteps,
                      double, double, double, double, bool, const std::optional<at::Tensor>&,
                      const std::optional<at::Tensor>&) {
  checkListSizes("_fused_adagrad_", self, grads, stateSums);
  TORCH_CHECK(stateSteps.size() == self.size(), "_fused_adagrad_: expected as many state steps as parameters, got ",
              stateSteps.size(), " for ", self.size());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_fused_sgd_", &fusedSgdMeta);
  m.impl("_fused_sgd_.tensor_lr", &fusedSgdTensorLrMeta);
  m.impl("_fused_adagrad_", &fusedAdagradMeta);
}

}  // namespace npusim::backend

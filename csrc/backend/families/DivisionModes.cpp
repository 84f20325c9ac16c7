// Division with a rounding mode (div / div_ / div.out with rounding_mode) on
// npu: torch_npu's kernels (op-plugin DivKernelNpuOpApi) check the mode
// themselves, before PyTorch's structured kernel could, with their own error
// code (ERR01001 OPS invalid parameter); the division then runs in the
// operator executor.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "backend/device/NpuErrors.h"
#include "backend/executor/OperatorExecutor.h"

namespace npusim::backend {
namespace {

void checkRoundingMode(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& arguments = op.schema().arguments();
  const size_t first = stack.size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name() != "rounding_mode") continue;
    const c10::IValue& mode = stack[first + i];
    if (mode.isNone()) return;
    const auto text = mode.toStringView();
    TORCH_CHECK(text == "trunc" || text == "floor",
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", text, "'",
                errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
    return;
  }
}

void divideWithMode(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  checkRoundingMode(op, *stack);
  executeOnNpu(op, keys, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"div.Tensor_mode", "div.Scalar_mode", "div_.Tensor_mode", "div_.Scalar_mode",
                           "div.out_mode", "div.Scalar_mode_out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&divideWithMode>());
  }
}

}  // namespace npusim::backend

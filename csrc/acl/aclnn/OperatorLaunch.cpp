#include "acl/aclnn/OperatorLaunch.h"

#include <mutex>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceType.h>

#include "backend/device/NpuStreams.h"
#include "backend/executor/OperatorExecutor.h"

namespace npusim::aclnn {

void ensureBackendReady() {
  static std::once_flag ready;
  std::call_once(ready, [] {
    if (!c10::is_privateuse1_backend_registered()) c10::register_privateuse1_backend("npu");
    backend::routeCpuKernelsThroughExecutor();
  });
}

OperatorLaunchScope::OperatorLaunchScope(int device, runtime::StreamId stream, std::optional<bool> matmulHf32)
    : deviceGuard_(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device))),
      device_(device),
      previousStream_(backend::currentStream(device)) {
  backend::setCurrentStream(device, stream);
  if (matmulHf32) matmulHf32_.emplace(*matmulHf32);
}

OperatorLaunchScope::~OperatorLaunchScope() { backend::setCurrentStream(device_, previousStream_); }

std::vector<c10::IValue> callNpuOperator(const char* name, std::vector<std::pair<std::string, c10::IValue>> arguments) {
  // Below autograd, as in a launch: the operator's kernel (or its Meta kernel for inference).
  const at::AutoDispatchBelowADInplaceOrView belowAutograd;
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  const c10::FunctionSchema& schema = op.schema();
  torch::jit::Stack stack;
  for (const c10::Argument& argument : schema.arguments()) {
    bool given = false;
    for (auto& [argName, value] : arguments) {
      if (argName == argument.name()) {
        stack.push_back(std::move(value));
        given = true;
        break;
      }
    }
    if (given) continue;
    TORCH_CHECK(argument.default_value().has_value(), name, ": argument ", argument.name(), " has no default");
    stack.push_back(*argument.default_value());
  }
  op.callBoxed(&stack);
  return stack;
}

}  // namespace npusim::aclnn

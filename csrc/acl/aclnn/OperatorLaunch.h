// The PyTorch side of one aclnn launch: npusim's PyTorch backend (which libopapi loads, with
// torch_npu's operators of csrc/ops) made ready in a process that may never have imported
// Python, and the scope an operator runs in so that it takes the PyTorch path exactly: below
// autograd, on its device, with the acl stream as the device's current stream (so that the
// executor prices it on that stream's timeline), and with the Cube precision its
// cubeMathType chose.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>

#include "backend/timing/Hf32Switches.h"
#include "runtime/Timeline.h"

namespace npusim::aclnn {

// Once per process: the npu device name and the executor's routing of CPU kernels (what
// importing npusim does for Python; harmless when it did already).
void ensureBackendReady();

class OperatorLaunchScope {
 public:
  OperatorLaunchScope(int device, runtime::StreamId stream, std::optional<bool> matmulHf32);
  ~OperatorLaunchScope();
  OperatorLaunchScope(const OperatorLaunchScope&) = delete;
  OperatorLaunchScope& operator=(const OperatorLaunchScope&) = delete;

 private:
  at::AutoDispatchBelowADInplaceOrView belowAutograd_;
  c10::DeviceGuard deviceGuard_;
  int device_;
  runtime::StreamId previousStream_;
  std::optional<backend::ScopedMatmulHf32> matmulHf32_;
};

// Calls the torch_npu operator `name` ("npu::npu_rms_norm") through the dispatcher, as
// torch.ops.npu.<op>(**arguments) does: the named arguments given, the schema's defaults for the
// rest. Returns its results.
std::vector<c10::IValue> callNpuOperator(const char* name, std::vector<std::pair<std::string, c10::IValue>> arguments);

}  // namespace npusim::aclnn

#include "acl/aclnn/OperatorLaunch.h"

#include <mutex>

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

}  // namespace npusim::aclnn

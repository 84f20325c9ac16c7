// The executor calls of aclnn/acl_meta.h (repeatable executors and the addresses of their
// tensors) and aclnnInit / aclnnFinalize.
#include <fstream>
#include <mutex>

#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/OpExecutor.h"
#include "acl/aclnn/OperatorLaunch.h"
#include "aclnn/aclnn_base.h"

namespace {

using npusim::aclnn::AclnnFailure;
using npusim::aclnn::callAclnn;
using npusim::aclnn::SlotKind;

aclnnStatus setAddress(const char* api, aclOpExecutor* executor, SlotKind kind, size_t index, aclTensor* tensor,
                       void* addr) {
  return callAclnn(api, [&] {
    npusim::aclnn::withLiveExecutor(executor, [&](aclOpExecutor& e) {
      npusim::aclnn::setTensorAddress(e, kind, index, tensor, addr);
    });
  });
}

std::mutex initMutex;
bool initialized = false;

}  // namespace

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return callAclnn("aclSetAclOpExecutorRepeatable", [&] {
    npusim::aclnn::withLiveExecutor(executor, [](aclOpExecutor& e) { npusim::aclnn::makeRepeatable(e); });
  });
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return callAclnn("aclDestroyAclOpExecutor", [&] { npusim::aclnn::destroyExecutor(executor); });
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("aclSetInputTensorAddr", executor, SlotKind::kInput, index, tensor, addr);
}

aclnnStatus aclSetOutputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("aclSetOutputTensorAddr", executor, SlotKind::kOutput, index, tensor, addr);
}

aclnnStatus aclSetTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("aclSetTensorAddr", executor, SlotKind::kAny, index, tensor, addr);
}

aclnnStatus AclSetInputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("AclSetInputTensorAddr", executor, SlotKind::kInput, index, tensor, addr);
}

aclnnStatus AclSetOutputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("AclSetOutputTensorAddr", executor, SlotKind::kOutput, index, tensor, addr);
}

aclnnStatus AclSetTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return setAddress("AclSetTensorAddr", executor, SlotKind::kAny, index, tensor, addr);
}

aclnnStatus aclnnInit(const char* configPath) {
  return callAclnn("aclnnInit", [&] {
    // The configuration (op_debug_config) switches kernel debugging npusim has no use for, but
    // a file that cannot be read is refused, as by the real call.
    if (configPath != nullptr && *configPath != '\0' && !std::ifstream(configPath)) {
      throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, std::string("cannot read the configuration file ") + configPath);
    }
    std::lock_guard<std::mutex> lock(initMutex);
    if (initialized) throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, "aclnnInit can be called once per process");
    npusim::aclnn::ensureBackendReady();
    initialized = true;
  });
}

aclnnStatus aclnnFinalize(void) {
  return callAclnn("aclnnFinalize", [] {
    std::lock_guard<std::mutex> lock(initMutex);
    if (!initialized) throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, "aclnnFinalize without aclnnInit");
    initialized = false;
  });
}

}  // extern "C"

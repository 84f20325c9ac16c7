#include "backend/executor/KernelOperands.h"

#include "backend/device/TensorAliasing.h"
#include "backend/timing/EstimateMode.h"

namespace npusim::backend {

at::Tensor kernelOperand(const at::Tensor& npu) {
  return estimateOnly() ? makeMetaAlias(npu, makeMetaStorageAlias(npu.storage())) : makeCpuAlias(npu);
}

at::Tensor kernelOperandOrUndefined(const at::Tensor& npu) { return npu.defined() ? kernelOperand(npu) : npu; }

std::optional<at::Tensor> kernelOperand(const std::optional<at::Tensor>& npu) {
  if (!npu.has_value() || !npu->defined()) return std::nullopt;
  return kernelOperand(*npu);
}

at::Tensor npuResult(const at::Tensor& result, int device) {
  if (!estimateOnly()) return adoptAsNpuTensor(result, device);
  return npuViewOf(allocateNpuStorageFor(result.storage(), device), result);
}

at::Tensor npuResultOrUndefined(const at::Tensor& result, int device) {
  return result.defined() ? npuResult(result, device) : result;
}

}  // namespace npusim::backend

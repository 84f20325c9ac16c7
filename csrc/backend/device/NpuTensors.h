// Which npu device a tensor is on, for the backend's kernels that take
// tensors of any device.
#pragma once

#include <ATen/core/Tensor.h>

#include "runtime/Runtime.h"

namespace npusim::backend {

inline bool isNpuTensor(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// The device index of an npu tensor; one without an index is on the current device.
inline int npuDeviceIndex(const at::Tensor& t) {
  return t.device().has_index() ? t.device().index() : runtime::Runtime::currentDevice();
}

}  // namespace npusim::backend

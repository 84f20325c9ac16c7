// The checks torch_npu makes before each task while its recovery features are
// in use (runtime/DeviceRecovery.h): a stopped device fails every task with
// "FORCE STOP", and with the unsafe-data check on, an operator refuses npu
// inputs whose memory was marked unsafe. The executor and the copies call
// these only when runtime::DeviceRecovery::active().
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

// Throws torch_npu's "FORCE STOP." error when `device` is stopped.
void checkDeviceNotStopped(int device);

// Throws "There is unsafe data in the input tensor." when the unsafe-data
// check is on and `tensor` is an npu tensor whose memory is marked unsafe.
void checkDataSafe(const at::Tensor& tensor);
void checkStorageDataSafe(const c10::Storage& storage);

// A copy's destination holds fresh data: its memory is safe again.
void markDataSafe(const at::Tensor& tensor);

}  // namespace npusim::backend

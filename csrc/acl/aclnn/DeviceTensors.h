// npu tensors over a program's device memory: an aclTensor's view (sizes, strides, offset)
// over its storage at its device address becomes an at::Tensor on the npu device that shares
// the memory (no copy, nothing freed when it goes). The address must be device memory of the
// stream's device, large enough for the view: a host address or one on another device is
// refused (ACLNN_ERR_PARAM_INVALID) rather than read.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "acl/aclnn/AclnnObjects.h"

namespace npusim::aclnn {

// The elements the view of `tensor` reaches from its storage start (offset + extent); 0 for an
// empty view.
int64_t viewReach(const aclTensor& tensor);

// The npu tensor of `tensor` on `device`; `name` is the argument's name in messages.
at::Tensor deviceTensor(const aclTensor& tensor, int device, const std::string& name);

// An npu tensor of `sizes` and `dtype`, contiguous, at `address` (workspace memory).
at::Tensor deviceTensorAt(void* address, const std::vector<int64_t>& sizes, c10::ScalarType dtype, int device);

// Throws ACLNN_ERR_PARAM_INVALID unless [address, address + bytes) is device memory of `device`.
void requireDeviceMemory(const void* address, uint64_t bytes, int device, const std::string& what);

// Moves a result the kernel wrote to fresh device memory into `out` (same shape and dtype) as
// the real kernel writes it there directly: through host aliases, so nothing is charged.
void placeResult(const at::Tensor& result, const at::Tensor& out);

}  // namespace npusim::aclnn

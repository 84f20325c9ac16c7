// How an uninitialized npu tensor is made: storage from the npu caching
// allocator on the current device, filled when PyTorch's deterministic mode
// asks for it. Shared by the empty_strided kernel and the allocation shortcut
// of Inductor's compiled wrappers (python/FastEmptyBinding.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

at::Tensor emptyStridedOnCurrentDevice(c10::IntArrayRef size, c10::IntArrayRef stride, c10::ScalarType dtype);

}  // namespace npusim::backend

// torch_npu's npu_change_data_ptr: a storage whose bytes are a part of another
// storage's device memory (npu_combine_tensors puts many tensors in one buffer).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace npusim::backend {

// Points the storage of `dst` at the bytes of `src`'s storage that start
// `byteOffset` bytes into it. `dst`'s storage keeps its own size; its former
// memory goes back to the allocator. The new bytes keep `src`'s storage alive
// (on the chip they would be reused once `src` is freed; here the host memory
// must stay valid for as long as anything points into it).
void redirectStorage(const at::Tensor& dst, const at::Tensor& src, int64_t byteOffset);

}  // namespace npusim::backend

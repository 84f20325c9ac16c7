// Zero-copy views between npu tensors and the CPU tensors their kernels use.
//
// Simulated device memory is host memory, so an npu tensor's data can be
// handed to a CPU kernel as a CPU tensor over the same bytes (a "CPU alias"),
// and a CPU tensor whose memory came from a device allocator can be adopted
// as an npu tensor. Neither copies data.
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

// A CPU tensor over `npu`'s memory, with its sizes, strides, offset and math
// bits. `storageAlias` may be given to make several aliases share one CPU
// storage (when their npu tensors share one). If the CPU kernel resizes the
// alias's storage, the new memory comes from the routing allocator.
at::Tensor makeCpuAlias(const at::Tensor& npu, const c10::Storage* storageAlias = nullptr);

// A CPU storage over the same bytes as the npu storage `npu`.
c10::Storage makeCpuStorageAlias(const c10::Storage& npu);

// An npu tensor on `device` with the data of `cpu` (a kernel output). Memory
// from a device allocator is shared, not copied; other memory is copied into
// fresh device memory.
at::Tensor adoptAsNpuTensor(const at::Tensor& cpu, int device);

// An npu tensor viewing `storage` (an npu storage) with the geometry of `like`.
at::Tensor npuViewOf(const c10::Storage& storage, const at::Tensor& like);

// An npu storage with the bytes of `cpu`'s storage (shared when they are
// device memory of `device`).
c10::Storage adoptAsNpuStorage(const c10::Storage& cpu, int device);

}  // namespace npusim::backend

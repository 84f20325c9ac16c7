// Zero-copy views between npu tensors and the CPU tensors their kernels use.
//
// Simulated device memory is host memory, so an npu tensor's data can be
// handed to a CPU kernel as a CPU tensor over the same bytes (a "CPU alias"),
// and a CPU tensor whose memory came from a device allocator can be adopted
// as an npu tensor. Neither copies data.
#pragma once

#include <array>

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

// The operator executor's aliases, reused from call to call. Building an alias
// costs two heap objects (a StorageImpl and a TensorImpl) and their teardown;
// a training loop hands the same parameters and activations to kernel after
// kernel, so each thread keeps the aliases it built last:
//  - one CPU storage alias per npu storage, kept while the npu storage has the
//    same bytes (data pointer and size). Every kernel thereby sees the same
//    CPU storage for one npu storage, so PyTorch's overlap checks (which
//    compare storages) see the sharing of arguments as they would on CPU;
//  - one CPU tensor alias per npu tensor, reused only while it has the npu
//    tensor's exact geometry, dtype and math bits, sits on that storage alias,
//    was made in the same inference mode and nobody else holds it (a kernel
//    that kept or reshaped it gets a fresh one next time).
// An entry whose npu object has died may be found again by a new object at
// the same address: it is then reused only if it describes the same bytes in
// the same way, which makes it a correct alias of the new object too.
class ReusableAliases {
 public:
  // This thread's (look it up once per operator call: a thread-local access
  // costs a call into the dynamic linker).
  static ReusableAliases& ofThisThread();

  c10::Storage storageAlias(const c10::Storage& npu);
  at::Tensor tensorAlias(const at::Tensor& npu, const c10::Storage& storageAlias);

 private:
  static constexpr size_t kSlotBits = 7;
  struct StorageSlot {
    const c10::StorageImpl* npu = nullptr;
    c10::Storage cpu;
  };
  struct TensorSlot {
    const c10::TensorImpl* npu = nullptr;
    at::Tensor cpu;
  };
  std::array<StorageSlot, size_t{1} << kSlotBits> storages_;
  std::array<TensorSlot, size_t{1} << kSlotBits> tensors_;
};

// Turns `cpu`, a new result of a CPU kernel that ran for an npu operator, into
// an npu tensor in place, when nothing else holds it or its storage and its
// memory came from the caching allocator of `device`: the TensorImpl and
// StorageImpl the kernel made become the npu tensor's (no new objects, no
// copy). Returns false and leaves `cpu` untouched otherwise (a view of
// another tensor, shared storage, memory from elsewhere, a tensor subclass or
// a wrapped number); adoptAsNpuTensor then makes the npu tensor.
bool convertResultToNpuInPlace(at::Tensor& cpu, int device);

}  // namespace npusim::backend

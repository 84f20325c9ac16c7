#include "backend/device/TensorAliasing.h"

#include <cstring>

#include <c10/core/TensorImpl.h>

#include "backend/device/NpuAllocator.h"

namespace npusim::backend {
namespace {

void copyGeometry(c10::TensorImpl* to, const at::Tensor& from) {
  to->set_sizes_and_strides(from.sizes(), from.strides(), from.storage_offset());
  to->_set_conj(from.is_conj());
  to->_set_neg(from.is_neg());
}

// Keeps a CPU storage alive for as long as an npu DataPtr shares its bytes.
void releaseSharedStorage(void* context) { c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(context)); }

}  // namespace

c10::Storage makeCpuStorageAlias(const c10::Storage& npu) {
  c10::StorageImpl* impl = npu.unsafeGetStorageImpl();
  void* data = const_cast<void*>(impl->data());
  c10::DataPtr view(data, data, nullptr, c10::Device(c10::DeviceType::CPU));
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), impl->nbytes(),
                                                             std::move(view), routingCpuAllocator(),
                                                             /*resizable=*/true));
}

at::Tensor makeCpuAlias(const at::Tensor& npu, const c10::Storage* storageAlias) {
  c10::Storage storage = storageAlias != nullptr ? *storageAlias : makeCpuStorageAlias(npu.storage());
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                               c10::DispatchKeySet(c10::DispatchKey::CPU), npu.dtype());
  copyGeometry(alias.unsafeGetTensorImpl(), npu);
  return alias;
}

c10::Storage adoptAsNpuStorage(const c10::Storage& cpu, int device) {
  c10::StorageImpl* impl = cpu.unsafeGetStorageImpl();
  const size_t nbytes = impl->nbytes();
  const c10::Device npuDevice(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  c10::DataPtr data;
  if (impl->data() == nullptr) {
    data = c10::DataPtr(nullptr, npuDevice);
  } else if (owningDevice(impl->data_ptr()) == device) {
    // Share the bytes: the npu DataPtr holds a reference to the CPU storage,
    // whose own deleter returns the block to the device allocator.
    c10::raw::intrusive_ptr::incref(impl);
    data = c10::DataPtr(const_cast<void*>(impl->data()), impl, &releaseSharedStorage, npuDevice);
  } else {
    data = allocateDeviceMemory(device, nbytes, c10::DeviceType::PrivateUse1);
    std::memcpy(data.get(), impl->data(), nbytes);
  }
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), nbytes,
                                                             std::move(data), npuDeviceAllocator(),
                                                             /*resizable=*/true));
}

at::Tensor npuViewOf(const c10::Storage& storage, const at::Tensor& like) {
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  copyGeometry(view.unsafeGetTensorImpl(), like);
  return view;
}

at::Tensor adoptAsNpuTensor(const at::Tensor& cpu, int device) {
  return npuViewOf(adoptAsNpuStorage(cpu.storage(), device), cpu);
}

}  // namespace npusim::backend

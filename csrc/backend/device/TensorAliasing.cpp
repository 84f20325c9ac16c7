#include "backend/device/TensorAliasing.h"

#include <cstring>
#include <typeinfo>

#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>

#include "backend/device/HeapThreadLocal.h"
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

namespace {

// Direct-mapped: a lookup is one multiply and one compare. A collision just
// builds an alias as before.
template <size_t Bits>
size_t slotOf(const void* key) noexcept {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> (64 - Bits));
}

bool sameGeometry(const c10::TensorImpl& alias, const c10::TensorImpl& npu) noexcept {
  return alias.dtype() == npu.dtype() && alias.storage_offset() == npu.storage_offset() &&
         alias.sizes().equals(npu.sizes()) && alias.strides().equals(npu.strides()) &&
         alias.is_conj() == npu.is_conj() && alias.is_neg() == npu.is_neg();
}

}  // namespace

ReusableAliases& ReusableAliases::ofThisThread() {
  // 4 KB: on the heap, see HeapThreadLocal.h.
  return HeapThreadLocal<ReusableAliases>::get();
}

c10::Storage ReusableAliases::storageAlias(const c10::Storage& npu) {
  const c10::StorageImpl* impl = npu.unsafeGetStorageImpl();
  StorageSlot& slot = storages_[slotOf<kSlotBits>(impl)];
  if (slot.npu == impl) {
    const c10::StorageImpl* cached = slot.cpu.unsafeGetStorageImpl();
    // Still a view of the same bytes (a kernel that resized the alias gave
    // it other memory, or the npu storage got new memory).
    if (cached->data() == impl->data() && cached->nbytes() == impl->nbytes()) return slot.cpu;
  }
  slot.npu = impl;
  slot.cpu = makeCpuStorageAlias(npu);
  return slot.cpu;
}

at::Tensor ReusableAliases::tensorAlias(const at::Tensor& npu, const c10::Storage& storageAlias) {
  const c10::TensorImpl* impl = npu.unsafeGetTensorImpl();
  TensorSlot& slot = tensors_[slotOf<kSlotBits>(impl)];
  if (slot.npu == impl && slot.cpu.use_count() == 1) {
    c10::TensorImpl* cached = slot.cpu.unsafeGetTensorImpl();
    // An alias made in inference mode lacks the autograd keys a normal one
    // has (and the reverse): reuse one only in the mode it was made in.
    if (cached->storage().unsafeGetStorageImpl() == storageAlias.unsafeGetStorageImpl() &&
        sameGeometry(*cached, *impl) && cached->is_inference() == c10::InferenceMode::is_enabled()) {
      return slot.cpu;
    }
  }
  slot.npu = impl;
  slot.cpu = makeCpuAlias(npu, &storageAlias);
  return slot.cpu;
}

bool convertResultToNpuInPlace(at::Tensor& cpu, int device) {
  c10::TensorImpl* impl = cpu.unsafeGetTensorImpl();
  if (cpu.use_count() != 1 || typeid(*impl) != typeid(c10::TensorImpl) || impl->is_wrapped_number() ||
      impl->device_type() != c10::DeviceType::CPU || impl->layout() != c10::kStrided || !impl->has_storage()) {
    return false;
  }
  c10::StorageImpl* storage = impl->storage().unsafeGetStorageImpl();
  if (impl->storage().use_count() != 1 || storage->data() == nullptr || owningDevice(storage->data_ptr()) != device) {
    return false;
  }
  const c10::Device npuDevice(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  storage->_mutable_data_ptr_no_checks().unsafe_set_device(npuDevice);
  // Growing it later (resize_) takes device memory, as for any npu storage.
  storage->set_allocator(npuDeviceAllocator());
  // The dispatch keys of the npu backend instead of the CPU's, and the device
  // the tensor reports (read from its storage).
  impl->_change_backend_component_keys(npuDevice);
  impl->set_storage_keep_dtype(impl->storage());
  return true;
}

}  // namespace npusim::backend

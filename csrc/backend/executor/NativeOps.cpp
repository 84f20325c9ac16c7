// The operators the npu backend implements itself rather than through the
// operator executor: factories, views and metadata changes, scalar reads.
// These create or reinterpret device memory, which a CPU kernel cannot do.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/Context.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuEmpty.h"
#include "backend/device/TensorAliasing.h"
#include "backend/layouts/StorageResize.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

c10::Device targetDevice(std::optional<c10::Device> device) {
  if (device && device->has_index()) return *device;
  return c10::Device(c10::DeviceType::PrivateUse1,
                     static_cast<c10::DeviceIndex>(runtime::Runtime::instance().currentDevice()));
}

// torch.use_deterministic_algorithms(True) with fill_uninitialized_memory
// (the default): new memory holds NaN (floating types) or the largest value
// (integers), as on CPU and CUDA, so reads of uninitialised data are visible.
void fillUninitializedIfDeterministic(const at::Tensor& tensor, int64_t fromByte = 0) {
  const auto& context = at::globalContext();
  if (!context.deterministicAlgorithms() || !context.deterministicFillUninitializedMemory()) return;
  if (tensor.numel() == 0 || estimateOnly()) return;
  at::Tensor alias = makeCpuAlias(tensor);
  if (fromByte > 0) {
    // Only the part that resize_ added: the storage bytes from `fromByte` on.
    const int64_t itemSize = static_cast<int64_t>(tensor.element_size());
    const int64_t total = static_cast<int64_t>(tensor.storage().nbytes()) / itemSize;
    const int64_t first = (fromByte + itemSize - 1) / itemSize;
    if (first >= total) return;
    alias = at::empty({0}, alias.options()).set_(alias.storage(), first, {total - first}, {1});
  }
  at::native::fill_empty_deterministic_(alias);
}

void checkDenseLayout(std::optional<c10::Layout> layout) {
  TORCH_CHECK(!layout || *layout == c10::Layout::Strided, "npu tensors support only the strided layout, got ",
              *layout);
}

at::Tensor emptyMemoryFormat(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pinMemory, std::optional<c10::MemoryFormat> memoryFormat) {
  checkDenseLayout(layout);
  TORCH_CHECK(!pinMemory.value_or(false), "Only dense CPU tensors can be pinned");
  const c10::DeviceGuard guard(targetDevice(device));
  at::Tensor result = at::detail::empty_generic(size, npuDeviceAllocator(),
                                                c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                c10::dtype_or_default(dtype), memoryFormat);
  fillUninitializedIfDeterministic(result);
  return result;
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                        std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                        std::optional<bool> pinMemory) {
  checkDenseLayout(layout);
  TORCH_CHECK(!pinMemory.value_or(false), "Only dense CPU tensors can be pinned");
  const c10::DeviceGuard guard(targetDevice(device));
  return emptyStridedOnCurrentDevice(size, stride, c10::dtype_or_default(dtype));
}

const at::Tensor& resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memoryFormat) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memoryFormat) return self;
  const c10::DeviceGuard guard(self.device());
  impl->set_sizes_contiguous(size);
  if (memoryFormat) impl->empty_tensor_restride(*memoryFormat);
  const size_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.dtype().itemsize(),
                                                         self.storage_offset());
  const size_t before = self.storage().nbytes();
  if (needed > before) {
    resizeNpuStorage(self.storage(), needed);
    fillUninitializedIfDeterministic(self, static_cast<int64_t>(before));
  }
  return self;
}

at::Tensor& setStorageWithGeometry(at::Tensor& self, c10::Storage source, int64_t storageOffset,
                                   c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "Expected an npu storage for set_, but got a storage on ", source.device());
  // PyTorch's check (TensorImpl::set_storage on CPU and CUDA): a tensor keeps its device.
  TORCH_CHECK(source.device() == self.device(), "Attempted to set the storage of a tensor on device \"",
              self.device(), "\" to a storage on different device \"", source.device(),
              "\".  This is no longer allowed; the devices must match.");
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  // set_(storage, offset, size) without strides means contiguous strides.
  if (stride.empty() && !size.empty()) {
    impl->set_sizes_contiguous(size);
    impl->set_storage_offset(storageOffset);
  } else {
    impl->set_sizes_and_strides(size, stride, storageOffset);
  }
  const size_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.dtype().itemsize(),
                                                         storageOffset);
  if (needed > self.storage().nbytes()) resizeNpuStorage(self.storage(), needed);
  return self;
}

at::Tensor& setSourceStorageOffset(at::Tensor& self, c10::Storage source, c10::SymInt storageOffset,
                                   c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return setStorageWithGeometry(self, std::move(source), storageOffset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                                C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& setSourceStorage(at::Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return setStorageWithGeometry(self, std::move(source), 0, {elements}, {1});
}

at::Tensor& setSourceTensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  return setStorageWithGeometry(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& setEmpty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0,
                     allocateDeviceMemory(self.device().index(), 0, c10::DeviceType::PrivateUse1),
                     npuDeviceAllocator(), /*resizable=*/true);
  return setStorageWithGeometry(self, std::move(empty), 0, {0}, {});
}

c10::Scalar localScalarDense(const at::Tensor& self) {
  // Reading a value on the host waits for the device: a synchronization point.
  waitForCurrentStream(self.device().index());
  recordSyncPoint("Tensor.item()");
  if (estimateOnly()) {
    warnEstimateOnce("item", "Tensor.item() has no data to read in estimate-only mode and returns 0");
    return c10::Scalar(0);
  }
  return makeCpuAlias(self).item();
}

// Module.to("npu") replaces parameter data in place (param.data = ...) only
// when PyTorch deems the two tensor types compatible; otherwise it creates
// new Parameter objects, which silently unties shared (tied) weights. Dense
// CPU and npu tensors are compatible, as dense CPU and CUDA tensors are.
bool hasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  auto isDense = [](const at::Tensor& t) {
    return t.layout() == c10::Layout::Strided &&
           (t.device().type() == c10::DeviceType::CPU || t.device().type() == c10::DeviceType::PrivateUse1);
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (isDense(self) && isDense(from));
}

// .to(dtype) of an npu tensor: torch_npu's dtype rules (float64 becomes
// float32 with a one-time warning), then PyTorch's own _to_copy. As in
// torch_npu's _to_copy, the rule applies only to a pure dtype conversion
// (.to(dtype), .double(), .type(dtype)): a call that names a device or a
// layout (.to("npu"), .npu(), .to(device, dtype)) keeps float64, and so do
// factories and host-to-device copies.
at::Tensor toCopy(const at::Tensor& self, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                  std::optional<c10::Device> device, std::optional<bool> pinMemory, bool nonBlocking,
                  std::optional<c10::MemoryFormat> memoryFormat) {
  const bool dtypeConversionOnly = dtype && !layout && !device;
  if (dtypeConversionOnly && self.device().type() == c10::DeviceType::PrivateUse1 &&
      *dtype != self.scalar_type()) {
    dtype = dtypeAfterCast(*dtype);
  }
  return at::native::_to_copy(self, dtype, layout, device, pinMemory, nonBlocking, memoryFormat);
}

// A zero tensor (what autograd returns for a gradient known to be zero):
// no memory, and the ZeroTensor key that makes operators treat it as zeros.
at::Tensor efficientZeroTensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pinMemory) {
  const c10::Device target = targetDevice(device);
  at::native::ZeroTensorAllocator allocator(target);
  const auto keys = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, c10::dtype_or_default(dtype), std::nullopt);
}

// Tensor.record_stream: the caching allocator keeps the block until the
// stream's work is done.
void recordStream(at::Tensor& self, c10::Stream stream) {
  npuDeviceAllocator()->recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", TORCH_FN(recordStream));
  m.impl("_efficientzerotensor", TORCH_FN(efficientZeroTensor));
  m.impl("_to_copy", TORCH_FN(toCopy));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(hasCompatibleShallowCopyType));
  m.impl("empty.memory_format", TORCH_FN(emptyMemoryFormat));
  m.impl("empty_strided", TORCH_FN(emptyStrided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("resize_", TORCH_FN(resize));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(setSourceStorageOffset));
  m.impl("set_.source_Storage", TORCH_FN(setSourceStorage));
  m.impl("set_.source_Tensor", TORCH_FN(setSourceTensor));
  m.impl("set_", TORCH_FN(setEmpty));
  m.impl("_local_scalar_dense", TORCH_FN(localScalarDense));
}

at::Tensor emptyStridedOnCurrentDevice(c10::IntArrayRef size, c10::IntArrayRef stride, c10::ScalarType dtype) {
  at::Tensor result = at::detail::empty_strided_generic(size, stride, npuDeviceAllocator(),
                                                        c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
  fillUninitializedIfDeterministic(result);
  return result;
}

}  // namespace npusim::backend

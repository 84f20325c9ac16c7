#include "acl/aclnn/DeviceTensors.h"

#include <c10/core/TensorImpl.h>

#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/DataTypes.h"
#include "backend/device/TensorAliasing.h"
#include "runtime/Runtime.h"

namespace npusim::aclnn {
namespace {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Where `address` lies: the device whose memory holds it, -1 if none.
int deviceHolding(const void* address) {
  runtime::Runtime& rt = runtime::Runtime::instance();
  for (int device = 0; device < rt.deviceCount(); ++device) {
    if (rt.isDeviceInitialized(device) && rt.memory(device).bytesFrom(address) > 0) return device;
  }
  return -1;
}

at::Tensor wrap(void* address, size_t nbytes, c10::ScalarType dtype, int device) {
  const c10::Device npu(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  // The program owns the memory: no deleter, no allocator, not resizable.
  c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), nbytes,
                                                             c10::DataPtr(address, npu), nullptr, false));
  return at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                   c10::scalarTypeToTypeMeta(dtype));
}

}  // namespace

int64_t viewReach(const aclTensor& tensor) {
  int64_t reach = tensor.offset + 1;
  for (size_t i = 0; i < tensor.viewDims.size(); ++i) {
    if (tensor.viewDims[i] == 0) return 0;
    reach += (tensor.viewDims[i] - 1) * tensor.strides[i];
  }
  return reach;
}

void requireDeviceMemory(const void* address, uint64_t bytes, int device, const std::string& what) {
  runtime::Runtime& rt = runtime::Runtime::instance();
  if (rt.isDeviceInitialized(device) && rt.memory(device).bytesFrom(address) >= bytes) return;
  const int holder = deviceHolding(address);
  if (holder < 0) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                       what + " is not device memory (aclrtMalloc, or an npu tensor's data_ptr())");
  }
  if (holder != device) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, what + " is memory of device " + std::to_string(holder) +
                                                    ", but the stream is on device " + std::to_string(device));
  }
  throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, what + " runs past the end of its device allocation (" +
                                                  std::to_string(bytes) + " bytes)");
}

at::Tensor deviceTensor(const aclTensor& tensor, int device, const std::string& name) {
  const auto dtype = scalarTypeOf(tensor.dataType);
  if (!dtype) throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, name + ": data type " + dataTypeName(tensor.dataType) +
                                                               " is not supported");
  const int64_t reach = viewReach(tensor);
  const int64_t storageElements = tensor.storageDims.empty() ? reach : std::max(product(tensor.storageDims), reach);
  if (!tensor.storageDims.empty()) {
    requireValid(reach <= product(tensor.storageDims),
                 name + ": the view " + shapeText(tensor.viewDims) + " (strides " + shapeText(tensor.strides) +
                     ", offset " + std::to_string(tensor.offset) + ") runs past its storage " +
                     shapeText(tensor.storageDims));
  }
  const size_t nbytes = static_cast<size_t>(storageElements) * c10::elementSize(*dtype);
  if (reach > 0) {
    requireArgument(tensor.data, (name + "'s device address").c_str());
    requireDeviceMemory(tensor.data, static_cast<uint64_t>(reach) * c10::elementSize(*dtype), device,
                        name + "'s address");
  }
  at::Tensor t = wrap(tensor.data, reach > 0 ? nbytes : 0, *dtype, device);
  t.unsafeGetTensorImpl()->set_sizes_and_strides(tensor.viewDims, tensor.strides, tensor.offset);
  return t;
}

at::Tensor deviceTensorAt(void* address, const std::vector<int64_t>& sizes, c10::ScalarType dtype, int device) {
  int64_t elements = 1;
  for (int64_t s : sizes) elements *= s;
  at::Tensor t = wrap(address, static_cast<size_t>(elements) * c10::elementSize(dtype), dtype, device);
  t.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  return t;
}

void placeResult(const at::Tensor& result, const at::Tensor& out) {
  if (!out.defined() || out.numel() == 0) return;
  backend::makeCpuAlias(out).copy_(backend::makeCpuAlias(result));
}

}  // namespace npusim::aclnn

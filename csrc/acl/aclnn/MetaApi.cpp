// The aclnn object calls of aclnn/acl_meta.h: creating, describing and destroying tensors,
// scalars, arrays and lists. Creation failures return nullptr and leave their reason in
// aclGetRecentErrMsg.
#include <cstring>
#include <memory>

#include "acl/aclnn/AclnnObjects.h"
#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/DataTypes.h"

namespace {

using npusim::aclnn::AclnnFailure;
using npusim::aclnn::callAclnn;
using npusim::aclnn::createOrNull;
using npusim::aclnn::registerObject;
using npusim::aclnn::requireArgument;
using npusim::aclnn::requireValid;

template <typename Object>
Object* registered(std::unique_ptr<Object> object) {
  registerObject(object.get());
  return object.release();
}

// Destroys `object` if it is live (a destroy call on a dead handle is refused, not a crash).
template <typename Object>
void destroyLive(const Object* object, const char* what) {
  requireArgument(object, what);
  if (!npusim::aclnn::unregisterObject(object)) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, std::string(what) + " is not a live object (destroyed twice?)");
  }
  delete object;
}

// A copy of `size` values from the host array `value` (nullptr only for an empty array).
template <typename Value>
std::vector<Value> hostValues(const Value* value, uint64_t size) {
  requireValid(size == 0 || value != nullptr, "value must not be nullptr when size > 0");
  return std::vector<Value>(value, value + size);
}

// Copies a live object's array into a new[] array the caller releases with delete[].
aclnnStatus copyOut(const char* api, const aclTensor* tensor, const std::vector<int64_t> aclTensor::*member,
                    int64_t** values, uint64_t* count) {
  return callAclnn(api, [&] {
    requireArgument(tensor, "tensor");
    requireArgument(values, "the output array");
    requireArgument(count, "the output count");
    npusim::aclnn::requireLive(tensor, "tensor");
    const std::vector<int64_t>& source = tensor->*member;
    *values = new int64_t[source.empty() ? 1 : source.size()];
    std::copy(source.begin(), source.end(), *values);
    *count = source.size();
  });
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  return createOrNull<aclTensor>("aclCreateTensor", [&] {
    auto tensor = std::make_unique<aclTensor>();
    npusim::aclnn::describeTensor(*tensor, viewDims, viewDimsNum, npusim::aclnn::enumBits(dataType), stride, offset,
                                  npusim::aclnn::enumBits(format), storageDims, storageDimsNum, tensorData);
    return registered(std::move(tensor));
  });
}

aclnnStatus aclInitTensor(aclTensor* tensor, const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                          const int64_t* stride, int64_t offset, aclFormat format, const int64_t* storageDims,
                          uint64_t storageDimsNum, void* tensorDataAddr) {
  return callAclnn("aclInitTensor", [&] {
    requireArgument(tensor, "tensor");
    npusim::aclnn::requireLive(tensor, "tensor");
    aclTensor described;
    npusim::aclnn::describeTensor(described, viewDims, viewDimsNum, npusim::aclnn::enumBits(dataType), stride, offset,
                                  npusim::aclnn::enumBits(format), storageDims, storageDimsNum, tensorDataAddr);
    *tensor = std::move(described);
  });
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  return createOrNull<aclScalar>("aclCreateScalar", [&] {
    requireArgument(value, "value");
    const int32_t type = npusim::aclnn::enumBits(dataType);
    const size_t bytes = npusim::aclnn::elementSize(type);
    requireValid(npusim::aclnn::scalarTypeOf(type).has_value() && bytes > 0 && bytes <= sizeof(aclScalar::bytes),
                 "data type " + npusim::aclnn::dataTypeName(type) + " has no scalars");
    auto scalar = std::make_unique<aclScalar>();
    scalar->dataType = type;
    std::memcpy(scalar->bytes, value, bytes);
    return registered(std::move(scalar));
  });
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return createOrNull<aclIntArray>("aclCreateIntArray", [&] {
    auto array = std::make_unique<aclIntArray>();
    array->values = hostValues(value, size);
    return registered(std::move(array));
  });
}

aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  return createOrNull<aclFloatArray>("aclCreateFloatArray", [&] {
    auto array = std::make_unique<aclFloatArray>();
    array->values = hostValues(value, size);
    return registered(std::move(array));
  });
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  return createOrNull<aclBoolArray>("aclCreateBoolArray", [&] {
    auto array = std::make_unique<aclBoolArray>();
    const std::vector<bool> values = hostValues(value, size);
    array->values = values;
    return registered(std::move(array));
  });
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  return createOrNull<aclTensorList>("aclCreateTensorList", [&] {
    requireValid(size == 0 || value != nullptr, "value must not be nullptr when size > 0");
    auto list = std::make_unique<aclTensorList>();
    for (uint64_t i = 0; i < size; ++i) {
      npusim::aclnn::requireLive(value[i], "a tensor of the list");
      list->tensors.push_back(const_cast<aclTensor*>(value[i]));
    }
    return registered(std::move(list));
  });
}

aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size) {
  return createOrNull<aclScalarList>("aclCreateScalarList", [&] {
    requireValid(size == 0 || value != nullptr, "value must not be nullptr when size > 0");
    auto list = std::make_unique<aclScalarList>();
    for (uint64_t i = 0; i < size; ++i) {
      npusim::aclnn::requireLive(value[i], "a scalar of the list");
      list->scalars.push_back(const_cast<aclScalar*>(value[i]));
    }
    return registered(std::move(list));
  });
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return callAclnn("aclDestroyTensor", [&] { destroyLive(tensor, "tensor"); });
}

aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return callAclnn("aclDestroyScalar", [&] { destroyLive(scalar, "scalar"); });
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return callAclnn("aclDestroyIntArray", [&] { destroyLive(array, "array"); });
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  return callAclnn("aclDestroyFloatArray", [&] { destroyLive(array, "array"); });
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  return callAclnn("aclDestroyBoolArray", [&] { destroyLive(array, "array"); });
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  return callAclnn("aclDestroyTensorList", [&] {
    requireArgument(array, "array");
    npusim::aclnn::requireLive(array, "array");
    // The list's tensors go with it (CANN: they need not be destroyed again).
    for (aclTensor* tensor : array->tensors) {
      if (npusim::aclnn::unregisterObject(tensor)) delete tensor;
    }
    destroyLive(array, "array");
  });
}

aclnnStatus aclDestroyScalarList(const aclScalarList* array) {
  return callAclnn("aclDestroyScalarList", [&] {
    requireArgument(array, "array");
    npusim::aclnn::requireLive(array, "array");
    for (aclScalar* scalar : array->scalars) {
      if (npusim::aclnn::unregisterObject(scalar)) delete scalar;
    }
    destroyLive(array, "array");
  });
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  return copyOut("aclGetViewShape", tensor, &aclTensor::viewDims, viewDims, viewDimsNum);
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  return copyOut("aclGetStorageShape", tensor, &aclTensor::storageDims, storageDims, storageDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  return copyOut("aclGetViewStrides", tensor, &aclTensor::strides, stridesValue, stridesNum);
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  return callAclnn("aclGetViewOffset", [&] {
    requireArgument(tensor, "tensor");
    requireArgument(offset, "offset");
    npusim::aclnn::requireLive(tensor, "tensor");
    *offset = tensor->offset;
  });
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  return callAclnn("aclGetFormat", [&] {
    requireArgument(tensor, "tensor");
    requireArgument(format, "format");
    npusim::aclnn::requireLive(tensor, "tensor");
    std::memcpy(format, &tensor->format, sizeof tensor->format);
  });
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  return callAclnn("aclGetDataType", [&] {
    requireArgument(tensor, "tensor");
    requireArgument(dataType, "dataType");
    npusim::aclnn::requireLive(tensor, "tensor");
    std::memcpy(dataType, &tensor->dataType, sizeof tensor->dataType);
  });
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return callAclnn("aclGetIntArraySize", [&] {
    requireArgument(array, "array");
    requireArgument(size, "size");
    npusim::aclnn::requireLive(array, "array");
    *size = array->values.size();
  });
}

aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  return callAclnn("aclGetFloatArraySize", [&] {
    requireArgument(array, "array");
    requireArgument(size, "size");
    npusim::aclnn::requireLive(array, "array");
    *size = array->values.size();
  });
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return callAclnn("aclGetBoolArraySize", [&] {
    requireArgument(array, "array");
    requireArgument(size, "size");
    npusim::aclnn::requireLive(array, "array");
    *size = array->values.size();
  });
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return callAclnn("aclGetTensorListSize", [&] {
    requireArgument(tensorList, "tensorList");
    requireArgument(size, "size");
    npusim::aclnn::requireLive(tensorList, "tensorList");
    *size = tensorList->tensors.size();
  });
}

aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size) {
  return callAclnn("aclGetScalarListSize", [&] {
    requireArgument(scalarList, "scalarList");
    requireArgument(size, "size");
    npusim::aclnn::requireLive(scalarList, "scalarList");
    *size = scalarList->scalars.size();
  });
}

aclnnStatus aclSetRawTensorAddr(aclTensor* tensor, void* addr) {
  return callAclnn("aclSetRawTensorAddr", [&] {
    requireArgument(tensor, "tensor");
    npusim::aclnn::requireLive(tensor, "tensor");
    tensor->data = addr;
  });
}

aclnnStatus aclGetRawTensorAddr(const aclTensor* tensor, void** addr) {
  return callAclnn("aclGetRawTensorAddr", [&] {
    requireArgument(tensor, "tensor");
    requireArgument(addr, "addr");
    npusim::aclnn::requireLive(tensor, "tensor");
    *addr = tensor->data;
  });
}

}  // extern "C"

#include "acl/aclnn/AclnnObjects.h"

#include <mutex>
#include <unordered_set>

#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/DataTypes.h"

namespace npusim::aclnn {
namespace {

struct LiveObjects {
  std::mutex mutex;
  std::unordered_set<const void*> objects;
};

LiveObjects& live() {
  // Never destroyed: a program may destroy its objects from static destructors.
  static auto* instance = new LiveObjects();
  return *instance;
}

}  // namespace

void registerObject(const void* object) {
  LiveObjects& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.objects.insert(object);
}

bool unregisterObject(const void* object) {
  LiveObjects& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.objects.erase(object) != 0;
}

bool isLive(const void* object) {
  LiveObjects& l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.objects.count(object) != 0;
}

void requireLive(const void* object, const char* what) {
  if (object != nullptr && !isLive(object)) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                       std::string(what) + " is not a live object: it was destroyed, or not made by aclCreateXxx");
  }
}

void describeTensor(aclTensor& tensor, const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType,
                    const int64_t* stride, int64_t offset, int32_t format, const int64_t* storageDims,
                    uint64_t storageDimsNum, void* data) {
  constexpr uint64_t kMostDims = 64;
  requireValid(viewDimsNum <= kMostDims && storageDimsNum <= kMostDims,
               "a tensor has at most " + std::to_string(kMostDims) + " dimensions");
  requireValid(viewDimsNum == 0 || viewDims != nullptr, "viewDims must not be nullptr when viewDimsNum > 0");
  requireValid(storageDimsNum == 0 || storageDims != nullptr, "storageDims must not be nullptr when storageDimsNum > 0");
  requireValid(scalarTypeOf(dataType).has_value() || (dataType != ACL_STRING && dataType != ACL_DT_UNDEFINED &&
                                                      elementSize(dataType) > 0),
               "data type " + dataTypeName(dataType) + " has no tensors");
  std::vector<int64_t> view(viewDims, viewDims + viewDimsNum);
  for (int64_t d : view) requireValid(d >= 0, "viewDims " + shapeText(view) + " has a negative dimension");
  std::vector<int64_t> strides(viewDimsNum, 1);
  if (stride != nullptr) {
    strides.assign(stride, stride + viewDimsNum);
    for (int64_t s : strides) requireValid(s >= 0, "stride " + shapeText(strides) + " has a negative value");
  } else {
    for (int64_t i = static_cast<int64_t>(viewDimsNum) - 2; i >= 0; --i) strides[i] = strides[i + 1] * view[i + 1];
  }
  requireValid(offset >= 0, "offset must not be negative, got " + std::to_string(offset));
  std::vector<int64_t> storage(storageDims, storageDims + storageDimsNum);
  for (int64_t d : storage) requireValid(d >= 0, "storageDims " + shapeText(storage) + " has a negative dimension");
  tensor.viewDims = std::move(view);
  tensor.strides = std::move(strides);
  tensor.offset = offset;
  tensor.dataType = dataType;
  tensor.format = format;
  tensor.storageDims = std::move(storage);
  tensor.data = data;
}

std::string shapeText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

}  // namespace npusim::aclnn

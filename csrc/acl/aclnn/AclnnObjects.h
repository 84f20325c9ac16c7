// The objects behind aclnn's opaque types (aclnn/acl_meta.h): what a program describes its
// device tensors, host scalars and host arrays with. They hold descriptions and host values
// only; device memory stays the program's.
//
// Every object is registered while alive, so that a destroyed or made-up handle passed to an
// operator is refused (ACLNN_ERR_PARAM_INVALID) instead of read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"

// A device tensor: a strided view (sizes, strides and offset in elements) over a storage of
// `storageDims` elements that starts at `data`.
struct aclTensor {
  std::vector<int64_t> viewDims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int32_t dataType = ACL_DT_UNDEFINED;  // aclDataType, kept as the integer the caller passed
  int32_t format = ACL_FORMAT_ND;
  std::vector<int64_t> storageDims;
  void* data = nullptr;
};

// A host value, its bytes as the caller's type (at most 16: COMPLEX128).
struct aclScalar {
  int32_t dataType = ACL_DT_UNDEFINED;
  alignas(16) unsigned char bytes[16] = {};
};

struct aclIntArray {
  std::vector<int64_t> values;
};

struct aclFloatArray {
  std::vector<float> values;
};

struct aclBoolArray {
  std::vector<bool> values;
};

// Owns its tensors: destroying the list destroys them.
struct aclTensorList {
  std::vector<aclTensor*> tensors;
};

// Owns its scalars.
struct aclScalarList {
  std::vector<aclScalar*> scalars;
};

namespace npusim::aclnn {

// Registration of live objects (created by the aclCreateXxx calls).
void registerObject(const void* object);
// Unregisters; false when `object` was not live.
bool unregisterObject(const void* object);
bool isLive(const void* object);

// `what` names the argument in messages. Throws ACLNN_ERR_PARAM_INVALID for a handle that is
// not live (nothing is thrown for null: optional arguments are null).
void requireLive(const void* object, const char* what);

// Fills `tensor` (aclCreateTensor / aclInitTensor); throws ACLNN_ERR_PARAM_INVALID for a
// negative dimension, stride or offset, or a data type without tensors.
void describeTensor(aclTensor& tensor, const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType,
                    const int64_t* stride, int64_t offset, int32_t format, const int64_t* storageDims,
                    uint64_t storageDimsNum, void* data);

// "[2, 3]" for messages.
std::string shapeText(const std::vector<int64_t>& dims);

}  // namespace npusim::aclnn

// The argument checks the aclnn operators share, each throwing the documented status:
// ACLNN_ERR_PARAM_NULLPTR for a required argument that is nullptr, ACLNN_ERR_PARAM_INVALID for
// a data type outside the operator's list (or one the chosen chip lacks), a format npusim does
// not lay out, too many dimensions, shapes that do not match. Shapes and type promotion are
// inferred with PyTorch's own rules on meta tensors, so they agree with the PyTorch path.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/Exception.h>

#include "acl/aclnn/AclnnObjects.h"
#include "acl/aclnn/AclnnStatus.h"

namespace npusim::aclnn {

using TypeList = std::initializer_list<c10::ScalarType>;

// The types of the element-wise operators (FLOAT, FLOAT16, DOUBLE, INT32, INT64, INT16, INT8,
// UINT8, BOOL, COMPLEX128, COMPLEX64, BFLOAT16).
extern const TypeList kElementwiseTypes;
// FLOAT, FLOAT16, BFLOAT16.
extern const TypeList kFloatingTypes;

// A required tensor: non-null (161001) and live (161002).
const aclTensor& requireTensor(const aclTensor* tensor, const char* name);
// A given optional tensor: live (161002); returned for chaining.
const aclTensor* requireLiveTensor(const aclTensor* tensor, const char* name);

// The tensor's type, which must be in `allowed` and exist on the chosen chip (BFLOAT16 needs
// Atlas A2 or later).
c10::ScalarType requireType(const aclTensor& tensor, const char* name, TypeList allowed);
// A data type passed as an argument (a target dtype).
c10::ScalarType requireDataType(int32_t dataType, const char* name, TypeList allowed);

// At most `most` dimensions (and at least `least`); an ND-style format (ND, NCHW, NHWC, NCL, NC,
// NCDHW, NDHWC: the storage is the view's), not a fractal or 5-D private format.
void requireDims(const aclTensor& tensor, const char* name, size_t least, size_t most);

void requireSameShape(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName);
void requireShape(const aclTensor& tensor, const char* name, const std::vector<int64_t>& expected);
void requireSameType(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName);

// A meta tensor with `tensor`'s shape, strides and type, for inference.
at::Tensor metaTensor(const aclTensor& tensor);

// The broadcast shape of two tensors (161002 when they do not broadcast).
std::vector<int64_t> broadcastShape(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName);

// The scalar's value and type.
const aclScalar& requireScalar(const aclScalar* scalar, const char* name);
c10::Scalar scalarValue(const aclScalar& scalar);
c10::ScalarType scalarType(const aclScalar& scalar);

// A host array of dimensions; each normalised into [0, rank), distinct.
std::vector<int64_t> requireDimList(const aclIntArray* dims, const char* name, int64_t rank);
// One dimension normalised into [0, rank) (a scalar tensor has rank 1 for this).
int64_t normaliseDim(int64_t dim, int64_t rank, const char* name);

// CANN's name of a type in messages: "DT_FLOAT16".
std::string typeName(c10::ScalarType type);

// Runs an inference on meta tensors (PyTorch's own shape and type rules, or the Meta kernel of
// a torch_npu operator); what it rejects becomes `code` with PyTorch's message.
template <typename Inference>
auto inferOrRefuse(aclnnStatus code, Inference&& inference) -> decltype(inference()) {
  try {
    return inference();
  } catch (const c10::Error& error) {
    throw AclnnFailure(code, error.what_without_backtrace());
  }
}

}  // namespace npusim::aclnn

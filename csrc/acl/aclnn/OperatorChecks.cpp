#include "acl/aclnn/OperatorChecks.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/complex.h>

#include <algorithm>
#include <cstring>

#include "acl/aclnn/AclnnStatus.h"
#include "acl/aclnn/DataTypes.h"
#include "ops/KernelSupport.h"

namespace npusim::aclnn {

const TypeList kElementwiseTypes = {c10::kFloat, c10::kHalf,  c10::kDouble, c10::kInt,           c10::kLong,
                                    c10::kShort, c10::kChar,  c10::kByte,   c10::kBool,          c10::kComplexDouble,
                                    c10::kComplexFloat, c10::kBFloat16};
const TypeList kFloatingTypes = {c10::kFloat, c10::kHalf, c10::kBFloat16};

namespace {

std::string listText(TypeList allowed) {
  std::string text = "[";
  bool first = true;
  for (c10::ScalarType type : allowed) {
    text += (first ? "" : ", ") + typeName(type);
    first = false;
  }
  return text + "]";
}

c10::ScalarType checkType(int32_t dataType, const std::string& what, TypeList allowed) {
  const auto type = scalarTypeOf(dataType);
  const bool listed = type && std::find(allowed.begin(), allowed.end(), *type) != allowed.end();
  requireValid(listed, what + " should be in dtype support list " + listText(allowed) + ", but got " +
                           dataTypeName(dataType));
  // BFLOAT16 exists from the Atlas A2 chips on (Ascend910B and later).
  if (*type == c10::kBFloat16) {
    const ops::ChipFamily family = ops::chipFamily();
    requireValid(family != ops::ChipFamily::kAscend910A && family != ops::ChipFamily::kAscend310P,
                 what + " is DT_BF16, which the chosen chip (NPUSIM_SOC) does not support");
  }
  return *type;
}

}  // namespace

std::string typeName(c10::ScalarType type) { return dataTypeName(aclDataTypeOf(type)); }

const aclTensor& requireTensor(const aclTensor* tensor, const char* name) {
  requireArgument(tensor, name);
  requireLive(tensor, name);
  return *tensor;
}

const aclTensor* requireLiveTensor(const aclTensor* tensor, const char* name) {
  requireLive(tensor, name);
  return tensor;
}

c10::ScalarType requireType(const aclTensor& tensor, const char* name, TypeList allowed) {
  return checkType(tensor.dataType, std::string(name) + "'s dtype", allowed);
}

c10::ScalarType requireDataType(int32_t dataType, const char* name, TypeList allowed) {
  return checkType(dataType, name, allowed);
}

void requireDims(const aclTensor& tensor, const char* name, size_t least, size_t most) {
  const size_t rank = tensor.viewDims.size();
  requireValid(rank >= least && rank <= most, std::string(name) + " should have " +
                                                  (least == most ? std::to_string(least)
                                                                 : std::to_string(least) + " to " + std::to_string(most)) +
                                                  " dimensions, but got " + std::to_string(rank) + " (" +
                                                  shapeText(tensor.viewDims) + ")");
  switch (tensor.format) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_NCL:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDHWC:
      return;
    default:
      throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                         std::string(name) + " has format " + std::to_string(tensor.format) +
                             ": npusim lays tensors out in the ND-style formats only (ND, NCHW, NHWC, NCL, NC, "
                             "NCDHW, NDHWC), not in the fractal or C0-blocked private formats");
  }
}

void requireShape(const aclTensor& tensor, const char* name, const std::vector<int64_t>& expected) {
  requireValid(tensor.viewDims == expected, std::string(name) + "'s shape should be " + shapeText(expected) +
                                                ", but got " + shapeText(tensor.viewDims));
}

void requireSameShape(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName) {
  requireValid(a.viewDims == b.viewDims, std::string(aName) + "'s shape " + shapeText(a.viewDims) + " and " + bName +
                                             "'s shape " + shapeText(b.viewDims) + " should be the same");
}

void requireSameType(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName) {
  requireValid(a.dataType == b.dataType, std::string(aName) + "'s dtype " + dataTypeName(a.dataType) + " and " +
                                             bName + "'s dtype " + dataTypeName(b.dataType) + " should be the same");
}

at::Tensor metaTensor(const aclTensor& tensor) {
  const auto type = scalarTypeOf(tensor.dataType);
  requireValid(type.has_value(), "data type " + dataTypeName(tensor.dataType) + " is not supported");
  return at::empty_strided(tensor.viewDims, tensor.strides, at::TensorOptions().dtype(*type).device(c10::kMeta));
}

std::vector<int64_t> broadcastShape(const aclTensor& a, const char* aName, const aclTensor& b, const char* bName) {
  try {
    const auto shape = at::infer_size_dimvector(a.viewDims, b.viewDims);
    return std::vector<int64_t>(shape.begin(), shape.end());
  } catch (const c10::Error&) {
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, std::string(aName) + "'s shape " + shapeText(a.viewDims) + " and " +
                                                    bName + "'s shape " + shapeText(b.viewDims) +
                                                    " cannot broadcast");
  }
}

const aclScalar& requireScalar(const aclScalar* scalar, const char* name) {
  requireArgument(scalar, name);
  requireLive(scalar, name);
  return *scalar;
}

c10::ScalarType scalarType(const aclScalar& scalar) {
  const auto type = scalarTypeOf(scalar.dataType);
  requireValid(type.has_value(), "scalar data type " + dataTypeName(scalar.dataType) + " is not supported");
  return *type;
}

c10::Scalar scalarValue(const aclScalar& scalar) {
  auto read = [&](auto value) {
    std::memcpy(&value, scalar.bytes, sizeof value);
    return value;
  };
  switch (scalarType(scalar)) {
    case c10::kFloat: return c10::Scalar(static_cast<double>(read(float{})));
    case c10::kDouble: return c10::Scalar(read(double{}));
    case c10::kHalf: return c10::Scalar(static_cast<double>(static_cast<float>(read(c10::Half{}))));
    case c10::kBFloat16: return c10::Scalar(static_cast<double>(static_cast<float>(read(c10::BFloat16{}))));
    case c10::kChar: return c10::Scalar(static_cast<int64_t>(read(int8_t{})));
    case c10::kByte: return c10::Scalar(static_cast<int64_t>(read(uint8_t{})));
    case c10::kShort: return c10::Scalar(static_cast<int64_t>(read(int16_t{})));
    case c10::kInt: return c10::Scalar(static_cast<int64_t>(read(int32_t{})));
    case c10::kLong: return c10::Scalar(read(int64_t{}));
    case c10::kUInt16: return c10::Scalar(static_cast<int64_t>(read(uint16_t{})));
    case c10::kUInt32: return c10::Scalar(static_cast<int64_t>(read(uint32_t{})));
    case c10::kUInt64: return c10::Scalar(read(uint64_t{}));
    case c10::kBool: return c10::Scalar(read(uint8_t{}) != 0);
    case c10::kComplexFloat: {
      const auto v = read(c10::complex<float>{});
      return c10::Scalar(c10::complex<double>(v.real(), v.imag()));
    }
    case c10::kComplexDouble: return c10::Scalar(read(c10::complex<double>{}));
    default: throw AclnnFailure(ACLNN_ERR_PARAM_INVALID, "scalar data type " + dataTypeName(scalar.dataType) +
                                                             " is not supported");
  }
}

int64_t normaliseDim(int64_t dim, int64_t rank, const char* name) {
  const int64_t extent = std::max<int64_t>(rank, 1);
  requireValid(dim >= -extent && dim < extent, std::string(name) + " " + std::to_string(dim) +
                                                   " is out of range [" + std::to_string(-extent) + ", " +
                                                   std::to_string(extent - 1) + "]");
  return dim < 0 ? dim + extent : dim;
}

std::vector<int64_t> requireDimList(const aclIntArray* dims, const char* name, int64_t rank) {
  requireArgument(dims, name);
  requireLive(dims, name);
  std::vector<int64_t> normalised;
  for (int64_t d : dims->values) {
    const int64_t n = normaliseDim(d, rank, name);
    requireValid(std::find(normalised.begin(), normalised.end(), n) == normalised.end(),
                 std::string(name) + " " + shapeText(dims->values) + " repeats dimension " + std::to_string(d));
    normalised.push_back(n);
  }
  return normalised;
}

}  // namespace npusim::aclnn

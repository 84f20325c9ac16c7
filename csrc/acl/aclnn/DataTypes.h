// CANN's aclDataType next to PyTorch's ScalarType: the element types an aclTensor or aclScalar
// can hold on npusim, their names in messages (CANN's DT_FLOAT16 style) and the chip's support.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <c10/core/ScalarType.h>

#include "aclnn/acl_meta.h"

namespace npusim::aclnn {

// The ScalarType of a data type npusim computes with; nullopt for the types PyTorch has no
// kernels for (ACL_STRING, ACL_INT4, ACL_UINT1, ACL_COMPLEX32, ACL_HIFLOAT8, FP8/FP6/FP4 ...).
std::optional<c10::ScalarType> scalarTypeOf(int32_t dataType) noexcept;

// The aclDataType of a ScalarType (ACL_DT_UNDEFINED when CANN has none).
aclDataType aclDataTypeOf(c10::ScalarType type) noexcept;

// "DT_FLOAT16" for ACL_FLOAT16, as CANN's messages name types; "DT_UNDEFINED(42)" for others.
std::string dataTypeName(int32_t dataType);

// Bytes of one element (0 for types without a byte size).
size_t elementSize(int32_t dataType) noexcept;

// The integer a C caller passed for an enum parameter (aclDataType, aclFormat): C may pass any
// int, which must not be read as the C++ enum, so entry points copy its bits and validate them.
template <typename Enum>
int32_t enumBits(const Enum& value) noexcept {
  static_assert(sizeof(Enum) == sizeof(int32_t), "acl enums are 32-bit");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

}  // namespace npusim::aclnn

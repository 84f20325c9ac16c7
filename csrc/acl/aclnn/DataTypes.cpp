#include "acl/aclnn/DataTypes.h"

namespace npusim::aclnn {
namespace {

struct TypeEntry {
  int32_t acl;
  const char* name;
  std::optional<c10::ScalarType> scalar;
  size_t bytes;
};

// CANN's aclDataType values (acl/acl_base.h) and the PyTorch type each computes as.
const TypeEntry kTypes[] = {
    {ACL_FLOAT, "DT_FLOAT", c10::ScalarType::Float, 4},
    {ACL_FLOAT16, "DT_FLOAT16", c10::ScalarType::Half, 2},
    {ACL_INT8, "DT_INT8", c10::ScalarType::Char, 1},
    {ACL_INT32, "DT_INT32", c10::ScalarType::Int, 4},
    {ACL_UINT8, "DT_UINT8", c10::ScalarType::Byte, 1},
    {ACL_INT16, "DT_INT16", c10::ScalarType::Short, 2},
    {ACL_UINT16, "DT_UINT16", c10::ScalarType::UInt16, 2},
    {ACL_UINT32, "DT_UINT32", c10::ScalarType::UInt32, 4},
    {ACL_INT64, "DT_INT64", c10::ScalarType::Long, 8},
    {ACL_UINT64, "DT_UINT64", c10::ScalarType::UInt64, 8},
    {ACL_DOUBLE, "DT_DOUBLE", c10::ScalarType::Double, 8},
    {ACL_BOOL, "DT_BOOL", c10::ScalarType::Bool, 1},
    {ACL_STRING, "DT_STRING", std::nullopt, 0},
    {ACL_COMPLEX64, "DT_COMPLEX64", c10::ScalarType::ComplexFloat, 8},
    {ACL_COMPLEX128, "DT_COMPLEX128", c10::ScalarType::ComplexDouble, 16},
    {ACL_BF16, "DT_BF16", c10::ScalarType::BFloat16, 2},
    {ACL_INT4, "DT_INT4", std::nullopt, 0},
    {ACL_UINT1, "DT_UINT1", std::nullopt, 0},
    {ACL_COMPLEX32, "DT_COMPLEX32", std::nullopt, 4},
    {ACL_HIFLOAT8, "DT_HIFLOAT8", std::nullopt, 1},
    {ACL_FLOAT8_E5M2, "DT_FLOAT8_E5M2", std::nullopt, 1},
    {ACL_FLOAT8_E4M3FN, "DT_FLOAT8_E4M3FN", std::nullopt, 1},
    {ACL_FLOAT8_E8M0, "DT_FLOAT8_E8M0", std::nullopt, 1},
    {ACL_FLOAT6_E3M2, "DT_FLOAT6_E3M2", std::nullopt, 0},
    {ACL_FLOAT6_E2M3, "DT_FLOAT6_E2M3", std::nullopt, 0},
    {ACL_FLOAT4_E2M1, "DT_FLOAT4_E2M1", std::nullopt, 0},
    {ACL_FLOAT4_E1M2, "DT_FLOAT4_E1M2", std::nullopt, 0},
};

const TypeEntry* find(int32_t dataType) noexcept {
  for (const TypeEntry& entry : kTypes) {
    if (entry.acl == dataType) return &entry;
  }
  return nullptr;
}

}  // namespace

std::optional<c10::ScalarType> scalarTypeOf(int32_t dataType) noexcept {
  const TypeEntry* entry = find(dataType);
  return entry == nullptr ? std::nullopt : entry->scalar;
}

aclDataType aclDataTypeOf(c10::ScalarType type) noexcept {
  for (const TypeEntry& entry : kTypes) {
    if (entry.scalar == type) return static_cast<aclDataType>(entry.acl);
  }
  return ACL_DT_UNDEFINED;
}

std::string dataTypeName(int32_t dataType) {
  const TypeEntry* entry = find(dataType);
  return entry != nullptr ? std::string(entry->name) : "DT_UNDEFINED(" + std::to_string(dataType) + ")";
}

size_t elementSize(int32_t dataType) noexcept {
  const TypeEntry* entry = find(dataType);
  return entry == nullptr ? 0 : entry->bytes;
}

}  // namespace npusim::aclnn

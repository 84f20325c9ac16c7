// Basic vocabulary of the performance model: element types, the unit an
// operator's time is spent on, and where the placement layer put it.
#pragma once

#include <cstdint>
#include <string_view>

namespace npusim::perf {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool, kComplex64, kOther };

// Where the time of an operator is spent; the report's breakdown.
enum class Unit { kCube, kVector, kAiCpu, kCpuFallback, kTransfer, kNone };

// Decided by the placement layer (a versioned table of the real stack's
// kernels); the cost model prices the answer. Default: AI Core.
enum class Placement { kAiCore, kAiCpu, kCpuFallback };

// Bytes of one element. kOther (an exotic or quantised type) is priced as 4.
constexpr int elementSize(DType type) noexcept {
  switch (type) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kComplex64: return 8;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kOther: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 4;
}

constexpr bool isFloatingPoint(DType type) noexcept {
  return type == DType::kFloat32 || type == DType::kFloat16 || type == DType::kBFloat16 || type == DType::kFloat64;
}

std::string_view dtypeName(DType type) noexcept;
std::string_view unitName(Unit unit) noexcept;
std::string_view placementName(Placement placement) noexcept;

}  // namespace npusim::perf

#include "perf/Types.h"

namespace npusim::perf {

std::string_view dtypeName(DType type) noexcept {
  switch (type) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kComplex64: return "complex64";
    case DType::kOther: return "other";
  }
  return "other";
}

std::string_view unitName(Unit unit) noexcept {
  switch (unit) {
    case Unit::kCube: return "Cube";
    case Unit::kVector: return "Vector";
    case Unit::kAiCpu: return "AI CPU";
    case Unit::kCpuFallback: return "CPU fallback";
    case Unit::kTransfer: return "Transfer";
    case Unit::kNone: return "None";
  }
  return "None";
}

std::string_view placementName(Placement placement) noexcept {
  switch (placement) {
    case Placement::kAiCore: return "AI Core";
    case Placement::kAiCpu: return "AI CPU";
    case Placement::kCpuFallback: return "CPU fallback";
  }
  return "AI Core";
}

}  // namespace npusim::perf

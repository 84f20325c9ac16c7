// Where the real Ascend stack runs each aten operator: the placement data of
// one torch_npu release line (python/npusim/data/placement/, format in its
// README), plus a user's overrides. No PyTorch here: operators are names and
// dtypes are indices into kDtypeNames, which the backend maps to ScalarType.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npusim::runtime {

enum class Placement : uint8_t { kAiCore = 0, kAiCpu = 1, kCpuFallback = 2 };
const char* placementName(Placement placement) noexcept;  // "ai_core", "ai_cpu", "cpu_fallback"

// The dtype names of the data files, in the order of their bit in a DtypeMask.
inline constexpr std::array<std::string_view, 16> kDtypeNames = {
    "bool",    "uint8",   "int8",      "int16",     "int32",      "int64",  "float16", "bfloat16",
    "float32", "float64", "complex32", "complex64", "complex128", "uint16", "uint32",  "uint64"};
using DtypeMask = uint32_t;
// The bit of `name` in a DtypeMask, or nullopt for an unknown name.
std::optional<int> dtypeIndex(std::string_view name) noexcept;

struct PlacementRule {
  enum class Condition : uint8_t { kAlways, kDtype, kIndexDtype };
  Placement placement = Placement::kAiCore;
  Condition condition = Condition::kAlways;
  DtypeMask dtypes = 0;  // for kDtype / kIndexDtype
  bool sync = false;
  std::string source;
};

// The rules that apply to one operator overload, in precedence order:
// conditional rules first (first match wins), then the unconditional rule.
struct OperatorRules {
  std::vector<PlacementRule> conditional;
  std::optional<PlacementRule> unconditional;
  bool listed() const noexcept { return unconditional.has_value() || !conditional.empty(); }

  // The rule for a call whose first tensor has dtype bit `firstDtype` (-1 if
  // none) and whose index tensors have the dtype bits in `indexDtypes`; null
  // when no rule applies.
  const PlacementRule* resolve(int firstDtype, DtypeMask indexDtypes) const noexcept;
};

// What the release line does with dtypes it does not support.
struct DtypeRules {
  struct Cast {
    int from = -1, to = -1;
    std::string message;  // the one-time warning
  };
  struct Reject {
    std::string errorCode;  // "ERR01002"
    std::string message;    // with {arg}, {scalar_type} placeholders
    std::string detail;     // the CANN text that follows, with {arg}, {dt}
  };
  std::vector<Cast> casts;
  std::map<int, Reject> rejects;  // by dtype bit
  DtypeMask rejectMask = 0;
  // Dtypes the AI Core cannot compute in: an ai_core operator on a device
  // tensor of one of them runs on the AI CPU (rule "ai_cpu", e.g. float64).
  DtypeMask aiCpuMask = 0;
};

class PlacementTable {
 public:
  // Parses an operator table. Throws ConfigError naming `origin` and the line.
  void addRules(std::string_view text, std::string_view origin, bool overrides);
  // Parses a dtype table.
  void addDtypeRules(std::string_view text, std::string_view origin);

  // The rules of "aten::name.overload" (overrides first, then the release
  // table; an exact overload beats "aten::name.*").
  OperatorRules lookup(std::string_view qualifiedName) const;
  const DtypeRules& dtypeRules() const noexcept { return dtypeRules_; }
  const std::string& releaseLine() const noexcept { return releaseLine_; }
  size_t ruleCount() const noexcept;

  // Where each override rule came from, so that the backend, which knows the
  // registered operators, can refuse one naming an operator that does not exist.
  struct OverrideLine {
    std::string operatorName;  // "aten::name.overload" or "aten::name.*"
    std::string origin;
    int line;
  };
  const std::vector<OverrideLine>& overrideLines() const noexcept { return overrideLines_; }

  // The table of the release line NPUSIM_TORCH_NPU_VERSION (default "2.13")
  // from `dataDirectory`/placement, plus NPUSIM_PLACEMENT_OVERRIDES. Throws
  // ConfigError for an unknown line (naming the available ones) or a bad file.
  static PlacementTable fromEnvironment(const std::string& dataDirectory);

 private:
  struct Entry {
    OperatorRules release;
    OperatorRules overrides;
  };
  std::map<std::string, Entry, std::less<>> entries_;
  DtypeRules dtypeRules_;
  std::string releaseLine_;
  std::vector<OverrideLine> overrideLines_;
};

}  // namespace npusim::runtime

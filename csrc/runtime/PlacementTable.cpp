#include "runtime/PlacementTable.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/ConfigFile.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Error.h"

namespace npusim::runtime {
namespace {

std::vector<std::string_view> splitTabs(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

[[noreturn]] void fail(std::string_view origin, int line, const std::string& what) {
  throw ConfigError("placement file " + printableText(origin, 4096) + " line " + std::to_string(line) + ": " + what);
}

template <typename Visitor>
void forEachRuleLine(std::string_view text, std::string_view origin, size_t fieldCount, Visitor visit) {
  int lineNumber = 0;
  size_t position = 0;
  while (position < text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const auto fields = splitTabs(line);
    if (fields.size() != fieldCount) {
      fail(origin, lineNumber,
           "expected " + std::to_string(fieldCount) + " TAB-separated fields, got " + std::to_string(fields.size()));
    }
    visit(fields, lineNumber);
  }
}

Placement parsePlacement(std::string_view text, std::string_view origin, int line) {
  if (text == "ai_core") return Placement::kAiCore;
  if (text == "ai_cpu") return Placement::kAiCpu;
  if (text == "cpu_fallback") return Placement::kCpuFallback;
  fail(origin, line, "placement must be ai_core, ai_cpu or cpu_fallback, got \"" + std::string(text) + "\"");
}

DtypeMask parseDtypeList(std::string_view list, std::string_view origin, int line) {
  DtypeMask mask = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view name = list.substr(start, comma - start);
    const auto bit = dtypeIndex(name);
    if (!bit) fail(origin, line, "unknown dtype \"" + std::string(name) + "\"");
    mask |= DtypeMask{1} << *bit;
    start = comma + 1;
  }
  return mask;
}

std::string readFile(const std::string& path) { return readConfigFile(path, "placement file"); }

// "aten::<name>" or "aten::<name>.<overload>" or "aten::<name>.*", with C
// identifiers: what a line's first field must look like.
bool wellFormedOperatorName(std::string_view name) {
  if (name.starts_with("aten::")) {
    name.remove_prefix(6);
  } else if (name.starts_with("npu::")) {
    name.remove_prefix(5);
  } else {
    return false;
  }
  const auto identifier = [](std::string_view part) {
    if (part.empty() || (part.front() >= '0' && part.front() <= '9')) return false;
    for (const char c : part) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
  };
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return identifier(name);
  const std::string_view overload = name.substr(dot + 1);
  return identifier(name.substr(0, dot)) && (overload == "*" || identifier(overload));
}

void mergeInto(OperatorRules& target, const OperatorRules& source) {
  target.conditional.insert(target.conditional.end(), source.conditional.begin(), source.conditional.end());
  if (!target.unconditional && source.unconditional) target.unconditional = source.unconditional;
}

}  // namespace

const char* placementName(Placement placement) noexcept {
  switch (placement) {
    case Placement::kAiCore: return "ai_core";
    case Placement::kAiCpu: return "ai_cpu";
    case Placement::kCpuFallback: return "cpu_fallback";
  }
  return "ai_core";
}

std::optional<int> dtypeIndex(std::string_view name) noexcept {
  for (size_t i = 0; i < kDtypeNames.size(); ++i) {
    if (kDtypeNames[i] == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

const PlacementRule* OperatorRules::resolve(int firstDtype, DtypeMask indexDtypes) const noexcept {
  for (const auto& rule : conditional) {
    if (rule.condition == PlacementRule::Condition::kDtype && firstDtype >= 0 &&
        (rule.dtypes & (DtypeMask{1} << firstDtype)) != 0) {
      return &rule;
    }
    if (rule.condition == PlacementRule::Condition::kIndexDtype && (rule.dtypes & indexDtypes) != 0) return &rule;
  }
  return unconditional ? &*unconditional : nullptr;
}

void PlacementTable::addRules(std::string_view text, std::string_view origin, bool overrides) {
  forEachRuleLine(text, origin, 5, [&](const std::vector<std::string_view>& f, int line) {
    // aten operators, and torch_npu's own (npu::) ones.
    if (f[0].rfind("aten::", 0) != 0 && f[0].rfind("npu::", 0) != 0) {
      fail(origin, line, "operator must start with aten:: or npu::");
    }
    if (!wellFormedOperatorName(f[0])) {
      fail(origin, line,
           "operator \"" + printableText(f[0]) +
               "\" is not of the form <namespace>::<name>, <namespace>::<name>.<overload> or <namespace>::<name>.* "
               "(namespace aten or npu)");
    }
    if (overrides) overrideLines_.push_back(OverrideLine{std::string(f[0]), std::string(origin), line});
    PlacementRule rule;
    rule.placement = parsePlacement(f[1], origin, line);
    if (f[2] == "-") {
      rule.condition = PlacementRule::Condition::kAlways;
    } else if (f[2].rfind("dtype=", 0) == 0) {
      rule.condition = PlacementRule::Condition::kDtype;
      rule.dtypes = parseDtypeList(f[2].substr(6), origin, line);
    } else if (f[2].rfind("index_dtype=", 0) == 0) {
      rule.condition = PlacementRule::Condition::kIndexDtype;
      rule.dtypes = parseDtypeList(f[2].substr(12), origin, line);
    } else {
      fail(origin, line, "condition must be -, dtype=... or index_dtype=..., got \"" + std::string(f[2]) + "\"");
    }
    if (f[3] != "yes" && f[3] != "no") fail(origin, line, "sync must be yes or no");
    rule.sync = f[3] == "yes";
    rule.source = std::string(f[4]);
    Entry& entry = entries_[std::string(f[0])];
    OperatorRules& rules = overrides ? entry.overrides : entry.release;
    if (rule.condition == PlacementRule::Condition::kAlways) {
      // In an overrides file a later line replaces an earlier one.
      if (rules.unconditional && !overrides) fail(origin, line, "duplicate rule for " + std::string(f[0]));
      rules.unconditional = std::move(rule);
    } else {
      rules.conditional.push_back(std::move(rule));
    }
  });
}

void PlacementTable::addDtypeRules(std::string_view text, std::string_view origin) {
  forEachRuleLine(text, origin, 6, [&](const std::vector<std::string_view>& f, int line) {
    const auto dtype = dtypeIndex(f[0]);
    if (!dtype) fail(origin, line, "unknown dtype \"" + std::string(f[0]) + "\"");
    if (f[1] == "cast_on_to_copy") {
      const auto target = dtypeIndex(f[2]);
      if (!target) fail(origin, line, "unknown target dtype \"" + std::string(f[2]) + "\"");
      dtypeRules_.casts.push_back(DtypeRules::Cast{*dtype, *target, std::string(f[4])});
    } else if (f[1] == "reject") {
      auto& reject = dtypeRules_.rejects[*dtype];
      reject.errorCode = std::string(f[3]);
      reject.message = std::string(f[4]);
      dtypeRules_.rejectMask |= DtypeMask{1} << *dtype;
    } else if (f[1] == "reject_detail") {
      dtypeRules_.rejects[*dtype].detail = std::string(f[4]);
    } else if (f[1] == "ai_cpu") {
      dtypeRules_.aiCpuMask |= DtypeMask{1} << *dtype;
    } else {
      fail(origin, line, "rule must be cast_on_to_copy, reject, reject_detail or ai_cpu");
    }
  });
}

OperatorRules PlacementTable::lookup(std::string_view qualifiedName) const {
  // "aten::add.Tensor" -> wildcard key "aten::add.*"; the default overload
  // "aten::abs" -> "aten::abs.*".
  const size_t nameStart = 6;
  const size_t dot = qualifiedName.find('.', nameStart);
  const std::string wildcard = std::string(qualifiedName.substr(0, dot)) + ".*";
  const auto exact = entries_.find(qualifiedName);
  const auto wild = entries_.find(wildcard);
  OperatorRules result;
  if (exact != entries_.end()) mergeInto(result, exact->second.overrides);
  if (wild != entries_.end()) mergeInto(result, wild->second.overrides);
  // An unconditional override always applies: the release table is not consulted.
  if (result.unconditional) return result;
  if (exact != entries_.end()) mergeInto(result, exact->second.release);
  if (wild != entries_.end()) mergeInto(result, wild->second.release);
  return result;
}

size_t PlacementTable::ruleCount() const noexcept {
  size_t count = 0;
  for (const auto& [name, entry] : entries_) {
    count += entry.release.conditional.size() + entry.overrides.conditional.size() +
             (entry.release.unconditional ? 1 : 0) + (entry.overrides.unconditional ? 1 : 0);
  }
  return count;
}

PlacementTable PlacementTable::fromEnvironment(const std::string& dataDirectory) {
  const auto requested = environmentValue("NPUSIM_TORCH_NPU_VERSION");
  const std::string line = requested && !requested->empty() ? *requested : "2.13";
  const std::string directory = dataDirectory + "/placement";
  const std::string operatorFile = directory + "/torch_npu-" + line + ".tsv";
  if (!std::ifstream(operatorFile)) {
    std::vector<std::string> available;
    if (DIR* handle = opendir(directory.c_str())) {
      while (dirent* entry = readdir(handle)) {
        const std::string name = entry->d_name;
        if (name.rfind("torch_npu-", 0) == 0 && name.size() > 14 && name.ends_with(".tsv")) {
          available.push_back(name.substr(10, name.size() - 14));
        }
      }
      closedir(handle);
    }
    std::sort(available.begin(), available.end());
    std::string list;
    for (const auto& name : available) list += (list.empty() ? "" : ", ") + name;
    throw ConfigError("NPUSIM_TORCH_NPU_VERSION=" + line + " has no placement table; available release lines: " +
                      (list.empty() ? std::string("none (") + directory + " is empty or missing)" : list));
  }
  PlacementTable table;
  table.releaseLine_ = line;
  table.addRules(readFile(operatorFile), operatorFile, false);
  const std::string dtypeFile = directory + "/dtypes-" + line + ".tsv";
  if (std::ifstream(dtypeFile)) table.addDtypeRules(readFile(dtypeFile), dtypeFile);
  if (const auto overrides = environmentValue("NPUSIM_PLACEMENT_OVERRIDES"); overrides && !overrides->empty()) {
    table.addRules(readFile(*overrides), *overrides, true);
  }
  return table;
}

}  // namespace npusim::runtime

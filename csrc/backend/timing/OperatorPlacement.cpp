#include "backend/timing/OperatorPlacement.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "backend/device/NpuErrors.h"
#include "backend/timing/DeviceActivity.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/SourceLocation.h"
#include "backend/timing/SyncDebugMode.h"
#include "runtime/ConfigFile.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Error.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

using runtime::Placement;

// An override for an operator that PyTorch does not have would be ignored
// without a word; refuse it, naming the file and line.
void checkOverriddenOperatorsExist(const runtime::PlacementTable& table) {
  if (table.overrideLines().empty()) return;
  auto& dispatcher = c10::Dispatcher::singleton();
  std::set<std::string> baseNames;  // for "aten::name.*", built on first need
  for (const auto& entry : table.overrideLines()) {
    const std::string& qualified = entry.operatorName;
    const size_t dot = qualified.find('.');
    const std::string base = qualified.substr(0, dot);
    const std::string overload = dot == std::string::npos ? std::string() : qualified.substr(dot + 1);
    bool exists = false;
    if (overload == "*") {
      if (baseNames.empty()) {
        for (const auto& name : dispatcher.getAllOpNames()) baseNames.insert(name.name);
      }
      exists = baseNames.count(base) != 0;
    } else {
      exists = dispatcher.findOp(c10::OperatorName(base, overload)).has_value();
    }
    if (!exists) {
      throw runtime::ConfigError("placement file " + runtime::printableText(entry.origin, 4096) + " line " +
                                 std::to_string(entry.line) + ": operator \"" + qualified +
                                 "\" does not exist in this PyTorch");
    }
  }
}

std::string dataDirectory() {
  if (const auto configured = runtime::environmentValue("NPUSIM_DATA_DIR"); configured && !configured->empty()) {
    return *configured;
  }
  // The data files are installed next to this library, in the npusim package.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&placementTable), &info) != 0 && info.dli_fname != nullptr) {
    std::string path = info.dli_fname;
    const size_t slash = path.find_last_of('/');
    return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/data";
  }
  return "data";
}

bool flagSet(const char* name) {
  const auto value = runtime::environmentValue(name);
  return value && *value == "1";
}

// Read once, as torch_npu does.
bool strictMode() {
  static const bool strict = flagSet("TORCH_NPU_FALLBACK_CPU_DISABLE");
  return strict;
}

c10::ScalarType scalarTypeOfBit(int bit) {
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto type = static_cast<c10::ScalarType>(i);
    if (dtypeBit(type) == bit) return type;
  }
  return c10::ScalarType::Undefined;
}

}  // namespace

// Sparse tensors: csrc/backend/layouts/SparseTensors.cpp.

namespace {

std::mutex reportMutex;
std::map<std::pair<std::string, std::string>, uint64_t>& syncPoints() {
  static auto* points = new std::map<std::pair<std::string, std::string>, uint64_t>();
  return *points;
}

}  // namespace

namespace {

// torch_npu prints its own warnings (TORCH_NPU_WARN) through c10's base handler, straight to
// stderr as "[W<date> <time> compiler_depend.ts:51] Warning: <text> (function <name>)" (its
// troubleshooting guide shows the fallback's), not as Python warnings.
void printTorchNpuWarning(const std::string& message, const char* function) {
  static c10::WarningHandler baseHandler;
  baseHandler.process(c10::Warning(c10::UserWarning(), c10::SourceLocation{function, "compiler_depend.ts", 51},
                                   message, /*verbatim=*/false));
}

}  // namespace

bool npuWarningsDisabled() {
  static const bool disabled = flagSet("TORCH_NPU_WARNING_DISABLE") || flagSet("TORCH_NPU_DISABLED_WARNING");
  return disabled;
}

c10::ScalarType dtypeAfterCast(c10::ScalarType requested) {
  const int bit = dtypeBit(requested);
  for (const auto& cast : placementTable().dtypeRules().casts) {
    if (cast.from != bit) continue;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true) && !npuWarningsDisabled()) TORCH_WARN(cast.message);
    return scalarTypeOfBit(cast.to);
  }
  return requested;
}

const runtime::PlacementTable& placementTable() {
  // Once loaded the table never changes: every operator call after that
  // reads it without the lock.
  static std::atomic<const runtime::PlacementTable*> ready{nullptr};
  if (const runtime::PlacementTable* loadedTable = ready.load(std::memory_order_acquire)) return *loadedTable;
  static std::mutex mutex;
  static std::unique_ptr<runtime::PlacementTable> table;
  std::lock_guard<std::mutex> lock(mutex);
  if (!table) {
    // A broken file raises here and is tried again on the next call.
    auto loaded = std::make_unique<runtime::PlacementTable>(runtime::PlacementTable::fromEnvironment(dataDirectory()));
    checkOverriddenOperatorsExist(*loaded);
    table = std::move(loaded);
    ready.store(table.get(), std::memory_order_release);
  }
  return *table;
}

int dtypeBit(c10::ScalarType type) noexcept {
  switch (type) {
    case c10::ScalarType::Bool: return 0;
    case c10::ScalarType::Byte: return 1;
    case c10::ScalarType::Char: return 2;
    case c10::ScalarType::Short: return 3;
    case c10::ScalarType::Int: return 4;
    case c10::ScalarType::Long: return 5;
    case c10::ScalarType::Half: return 6;
    case c10::ScalarType::BFloat16: return 7;
    case c10::ScalarType::Float: return 8;
    case c10::ScalarType::Double: return 9;
    case c10::ScalarType::ComplexHalf: return 10;
    case c10::ScalarType::ComplexFloat: return 11;
    case c10::ScalarType::ComplexDouble: return 12;
    case c10::ScalarType::UInt16: return 13;
    case c10::ScalarType::UInt32: return 14;
    case c10::ScalarType::UInt64: return 15;
    default: return -1;
  }
}

namespace {

std::string replaceAll(std::string text, std::string_view placeholder, std::string_view value) {
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
    text.replace(at, placeholder.size(), value);
  }
  return text;
}

// torch_npu's error for a dtype its kernels do not take, e.g.
// "self scalar_type:UInt64is not surpported." then the CANN detail.
[[noreturn]] void raiseUnsupportedDtype(const OperatorRecord& record, const CallFacts& facts) {
  const int bit = dtypeBit(facts.rejectedType);
  const auto& reject = placementTable().dtypeRules().rejects.at(bit);
  std::string dtName = "DT_";
  for (char c : runtime::kDtypeNames[static_cast<size_t>(bit)]) dtName += static_cast<char>(std::toupper(c));
  auto fill = [&](const std::string& text) {
    return replaceAll(replaceAll(replaceAll(text, "{arg}", facts.rejectedArgument), "{scalar_type}",
                                 c10::toString(facts.rejectedType)),
                      "{dt}", dtName);
  };
  const std::string message = fill(reject.message);
  const std::string detail = reject.detail.empty() ? std::string() : "\n" + fill(reject.detail);
  NPUSIM_PLOG(runtime::LogLevel::kError, "APP", "[PTA]:" + record.name + ": " + message + detail);
  TORCH_CHECK(false, message, errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidType), detail);
}

}  // namespace

PlacementDecision decidePlacement(OperatorRecord& record, const CallFacts& facts) {
  const runtime::PlacementRule* rule = record.placementRules.resolve(facts.firstDtype, facts.indexDtypes);
  Placement placement = rule != nullptr ? rule->placement : record.defaultPlacement;
  // The AI Core has no float64 units: the release line's kernels for such
  // dtypes are AI CPU kernels.
  if (placement == Placement::kAiCore && (facts.deviceDtypes & placementTable().dtypeRules().aiCpuMask) != 0) {
    placement = Placement::kAiCpu;
  }
  if (placement == Placement::kCpuFallback) {
    const std::string& fallbackName = record.fallbackName.empty() ? record.name : record.fallbackName;
    if (strictMode()) {
      const std::string message = "The operator '" + fallbackName +
                                  "' would execute its main computation on CPU through dispatcher backend fallback "
                                  "because no kernel is registered for the NPU PrivateUse1 backend, but CPU fallback "
                                  "is disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1.";
      NPUSIM_PLOG(runtime::LogLevel::kError, "APP", "[PTA]:" + message);
      TORCH_CHECK(false, message, errorSuffix(ErrorModule::kOps, ErrorKind::kFeatureNotSupported));
    }
    if (!record.fallbackSourceRecorded.exchange(true)) {
      const std::string source = currentSourceLocation();
      std::lock_guard<std::mutex> lock(reportMutex);
      record.firstFallbackSource = source;
    }
    if (!record.fallbackWarned.exchange(true)) {
      const std::string message = "CAUTION: The operator '" + fallbackName +
                                  "' is not currently supported on the NPU backend and will fall back to run on the "
                                  "CPU. This may have performance implications.";
      NPUSIM_PLOG(runtime::LogLevel::kWarning, "APP", "[PTA]:" + message);
      if (!npuWarningsDisabled()) printTorchNpuWarning(message, "npu_cpu_fallback");
    }
  } else if (facts.rejectedType != c10::ScalarType::Undefined) {
    raiseUnsupportedDtype(record, facts);
  }
  record.placementCalls[static_cast<size_t>(placement)].fetch_add(1, std::memory_order_relaxed);
  return PlacementDecision{placement, rule != nullptr && rule->sync};
}

void recordSyncPoint(std::string_view what, bool explicitDeviceWait) {
  if (!explicitDeviceWait) warnOrErrorOnSync();
  // Labelled by what the user wrote where that is known; one count per
  // library call (a torch.save of many tensors is one sync point).
  const SyncDescription sync = describeCurrentSync();
  if (sync.sameCall) return;
  // An operator keeps its aten name next to the user's call: "torch.nonzero
  // (aten::nonzero)", "Tensor.__getitem__ (aten::index.Tensor)".
  std::string label(what);
  if (!sync.label.empty()) {
    label = what.rfind("aten::", 0) == 0 ? sync.label + " (" + std::string(what) + ")" : sync.label;
  }
  if (const DeviceActivitySink sink = deviceActivitySink()) {
    DeviceActivity activity;
    activity.kind = DeviceActivityKind::kSynchronize;
    activity.hostNs = runtime::Runtime::instance().hostClock().now();
    activity.what = label;
    activity.source = sync.location;
    sink(activity);
  }
  std::lock_guard<std::mutex> lock(reportMutex);
  ++syncPoints()[{std::move(label), sync.location}];
}

PlacementReport placementReport() {
  PlacementReport report;
  report.releaseLine = placementTable().releaseLine();
  std::lock_guard<std::mutex> lock(reportMutex);
  forEachOperatorRecord([&](OperatorRecord& record) {
    PlacementReport::OperatorCounts counts;
    counts.name = record.name;
    counts.aiCore = record.placementCalls[0].load(std::memory_order_relaxed);
    counts.aiCpu = record.placementCalls[1].load(std::memory_order_relaxed);
    counts.cpuFallback = record.placementCalls[2].load(std::memory_order_relaxed);
    counts.deviceNs = record.deviceNs.load(std::memory_order_relaxed);
    if (counts.aiCore + counts.aiCpu + counts.cpuFallback == 0) return;
    if (counts.cpuFallback > 0) {
      report.fallbacks.push_back(PlacementReport::Fallback{record.name, counts.cpuFallback, record.firstFallbackSource});
    }
    report.operators.push_back(std::move(counts));
  });
  for (const auto& [key, count] : syncPoints()) {
    report.syncPoints.push_back(PlacementReport::SyncPoint{key.first, key.second, count});
  }
  return report;
}

void resetPlacementReport() {
  std::lock_guard<std::mutex> lock(reportMutex);
  syncPoints().clear();
  forEachOperatorRecord([](OperatorRecord& record) {
    for (auto& calls : record.placementCalls) calls.store(0, std::memory_order_relaxed);
    record.deviceNs.store(0, std::memory_order_relaxed);
    record.firstFallbackSource.clear();
    record.fallbackSourceRecorded.store(false);
    // The warning stays "once per operator" for the process, as torch_npu's.
  });
}

}  // namespace npusim::backend

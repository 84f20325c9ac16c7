#include "backend/timing/OperatorRecords.h"

#include <array>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "backend/device/HeapThreadLocal.h"
#include "backend/timing/OperatorPlacement.h"

namespace npusim::backend {
namespace {

std::shared_mutex recordsMutex;
// Keyed by the schema's address, which is stable for the operator's lifetime.
std::unordered_map<const void*, std::unique_ptr<OperatorRecord>>& records() {
  static auto* table = new std::unordered_map<const void*, std::unique_ptr<OperatorRecord>>();
  return *table;
}

// Operators whose first argument is written without being read: copies into
// it, fills and the random fills (`*_` of a distribution), set_ and resize_.
bool writesFirstArgumentOnly(const std::string& base) {
  static const char* const kNames[] = {
      "aten::copy_",        "aten::fill_",     "aten::zero_",       "aten::uniform_",    "aten::normal_",
      "aten::bernoulli_",   "aten::exponential_", "aten::geometric_", "aten::log_normal_", "aten::cauchy_",
      "aten::random_",      "aten::_foreach_zero_", "aten::_foreach_copy_", "aten::set_",   "aten::resize_",
      "aten::resize_as_",   "aten::fill_diagonal_"};
  for (const char* name : kNames) {
    if (base == name) return true;
  }
  return false;
}

// Fused optimizers mark their gradients written (an AMP grad_scale unscales
// them in place on CUDA); the NPU kernels read them only.
bool isFusedOptimizer(const std::string& base) {
  return base == "aten::_fused_adam_" || base == "aten::_fused_adamw_" || base == "aten::_fused_sgd_" ||
         base == "aten::_fused_adagrad_";
}

uint8_t operandRole(const c10::Argument& argument, size_t index, const std::string& base) {
  namespace role = operand_role;
  const auto* alias = argument.alias_info();
  if (alias == nullptr || !alias->isWrite()) return role::kRead;
  if (argument.is_out() || (index == 0 && writesFirstArgumentOnly(base))) return role::kWrite;
  if (isFusedOptimizer(base) && argument.name() == "grads") return role::kRead;
  return role::kRead | role::kWrite;
}

// A structured operator's functional and in-place forms have only the
// CompositeExplicitAutogradNonFunctional kernel, which runs the out= overload:
// on the real stack they fall back exactly when that overload has no NPU
// kernel (torch_npu's test_fault_mode: t.fmax(t) warns for 'aten::fmax.out').
// Returns the out= overload's name in that case.
std::optional<std::string> unsupportedStructuredOutKernel(const c10::OperatorHandle& op, const std::string& name) {
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
    return std::nullopt;
  }
  const std::string functional = name.size() > 1 && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
  const auto out = c10::Dispatcher::singleton().findSchema({functional, "out"});
  if (!out.has_value() || out->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
      out->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
    return std::nullopt;
  }
  const std::string outName = functional + ".out";
  if (placementTable().lookup(outName).listed()) return std::nullopt;
  return outName;
}

std::unique_ptr<OperatorRecord> describe(const c10::OperatorHandle& op) {
  auto record = std::make_unique<OperatorRecord>();
  const auto& schema = op.schema();
  const auto& name = schema.operator_name();
  record->name = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  record->schema = &schema;
  const std::string& base = name.name;
  record->acceptsCpuTensors = base == "aten::index" || base == "aten::index_put" || base == "aten::index_put_" ||
                              base == "aten::_index_put_impl_" || base == "aten::_unsafe_index" ||
                              base == "aten::_unsafe_index_put";
  const auto& arguments = schema.arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto* alias = arguments[i].alias_info();
    if (alias != nullptr && alias->isWrite()) record->writtenArguments.push_back(i);
    record->operandRoles.push_back(operandRole(arguments[i], i, base));
    const auto& type = arguments[i].type();
    const auto generator = c10::GeneratorType::get();
    if (*type == *generator || *type == *c10::OptionalType::create(generator)) record->generatorArguments.push_back(i);
    if (arguments[i].name() == "indices") record->indicesArgument = static_cast<int>(i);
  }
  record->kind = perf::classifyOperator(record->name);
  record->placementRules = placementTable().lookup(record->name);
  record->rejectedDtypes = placementTable().dtypeRules().rejectMask;
  if (base == "aten::zero_") {
    // Zero fills take the unsigned 16/32/64-bit dtypes the table rejects for
    // computing operators: torch_npu's own tests at the 2.13 tag
    // (test/npu/test_c10d.py) fill uint16/32/64 npu tensors with zeros_like.
    for (auto type : {c10::ScalarType::UInt16, c10::ScalarType::UInt32, c10::ScalarType::UInt64}) {
      record->rejectedDtypes &= ~(runtime::DtypeMask{1} << dtypeBit(type));
    }
  }
  // On the real stack an operator with a composite kernel runs that kernel
  // (made of operators that are classified one by one), so an unlisted
  // composite operator is no CPU fallback.
  if (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
    record->defaultPlacement = runtime::Placement::kAiCore;
    if (!record->placementRules.listed()) {
      if (auto out = unsupportedStructuredOutKernel(op, name.name)) {
        record->defaultPlacement = runtime::Placement::kCpuFallback;
        record->fallbackName = *out;
      }
    }
  }
  return record;
}

}  // namespace

namespace {

OperatorRecord& lookUpOrDescribe(const c10::OperatorHandle& op, const void* key) {
  {
    std::shared_lock<std::shared_mutex> lock(recordsMutex);
    auto found = records().find(key);
    if (found != records().end()) return *found->second;
  }
  // Described outside the lock: describing may load the placement table,
  // which may fail (the next call tries again).
  std::unique_ptr<OperatorRecord> described = describe(op);
  std::unique_lock<std::shared_mutex> lock(recordsMutex);
  auto& slot = records()[key];
  if (!slot) slot = std::move(described);
  return *slot;
}

// Each thread remembers the records of the operators it ran lately, so that
// a call takes neither the records' lock nor a hash lookup. Safe because a
// record is never removed and keeps its address until exit.
struct CachedRecord {
  const void* key = nullptr;
  OperatorRecord* record = nullptr;
};
constexpr size_t kCachedRecords = 256;  // a power of two
// 4 KB: on the heap (see backend/device/HeapThreadLocal.h).
using RecentRecords = HeapThreadLocal<std::array<CachedRecord, kCachedRecords>>;

}  // namespace

OperatorRecord& operatorRecord(const c10::OperatorHandle& op) {
  const void* key = &op.schema();
  // Schemas are heap objects: the low bits of the address carry no information.
  CachedRecord& cached = RecentRecords::get()[(reinterpret_cast<uintptr_t>(key) >> 5) & (kCachedRecords - 1)];
  if (cached.key == key) return *cached.record;
  OperatorRecord& record = lookUpOrDescribe(op, key);
  cached = CachedRecord{key, &record};
  return record;
}

OperatorRecord& nativeOperatorRecord(const char* name, const char* overload) {
  return operatorRecord(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload));
}

OperatorRecord& kernelRecord(const std::string& qualifiedName) {
  // One record per name, found from any call site.
  static auto* names = new std::map<std::string, OperatorRecord*>();
  {
    std::shared_lock<std::shared_mutex> lock(recordsMutex);
    auto found = names->find(qualifiedName);
    if (found != names->end()) return *found->second;
  }
  auto record = std::make_unique<OperatorRecord>();
  record->name = qualifiedName;
  record->kind = perf::classifyOperator(qualifiedName);
  record->placementRules = placementTable().lookup(qualifiedName);
  record->rejectedDtypes = placementTable().dtypeRules().rejectMask;
  record->defaultPlacement = runtime::Placement::kAiCore;
  std::unique_lock<std::shared_mutex> lock(recordsMutex);
  OperatorRecord*& slot = (*names)[qualifiedName];
  if (slot == nullptr) {
    // Listed with the operators' records, keyed by its own address.
    slot = record.get();
    records()[slot] = std::move(record);
  }
  return *slot;
}

void countNativeCall(OperatorRecord& record, uint64_t deviceNs) {
  record.calls.fetch_add(1, std::memory_order_relaxed);
  record.deviceNs.fetch_add(deviceNs, std::memory_order_relaxed);
  record.placementCalls[static_cast<size_t>(runtime::Placement::kAiCore)].fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> operatorCounts() {
  std::shared_lock<std::shared_mutex> lock(recordsMutex);
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (const auto& [key, record] : records()) {
    const uint64_t calls = record->calls.load(std::memory_order_relaxed);
    if (calls > 0) counts.emplace_back(record->name, calls);
  }
  return counts;
}

void forEachOperatorRecord(const std::function<void(OperatorRecord&)>& visit) {
  std::shared_lock<std::shared_mutex> lock(recordsMutex);
  for (auto& [key, record] : records()) visit(*record);
}

void resetOperatorCounts() {
  std::shared_lock<std::shared_mutex> lock(recordsMutex);
  for (auto& [key, record] : records()) {
    record->calls.store(0, std::memory_order_relaxed);
    record->deviceNs.store(0, std::memory_order_relaxed);
  }
}

}  // namespace npusim::backend

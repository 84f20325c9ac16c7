#include "backend/OperatorRecords.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "backend/OperatorPlacement.h"

namespace npusim::backend {
namespace {

std::shared_mutex recordsMutex;
// Keyed by the schema's address, which is stable for the operator's lifetime.
std::unordered_map<const void*, std::unique_ptr<OperatorRecord>>& records() {
  static auto* table = new std::unordered_map<const void*, std::unique_ptr<OperatorRecord>>();
  return *table;
}

std::unique_ptr<OperatorRecord> describe(const c10::OperatorHandle& op) {
  auto record = std::make_unique<OperatorRecord>();
  const auto& schema = op.schema();
  const auto& name = schema.operator_name();
  record->name = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  const std::string& base = name.name;
  record->acceptsCpuTensors = base == "aten::index" || base == "aten::index_put" || base == "aten::index_put_" ||
                              base == "aten::_index_put_impl_" || base == "aten::_unsafe_index" ||
                              base == "aten::_unsafe_index_put";
  const auto& arguments = schema.arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto* alias = arguments[i].alias_info();
    if (alias != nullptr && alias->isWrite()) record->writtenArguments.push_back(i);
    const auto& type = arguments[i].type();
    const auto generator = c10::GeneratorType::get();
    if (*type == *generator || *type == *c10::OptionalType::create(generator)) record->generatorArguments.push_back(i);
    if (arguments[i].name() == "indices") record->indicesArgument = static_cast<int>(i);
  }
  record->kind = perf::classifyOperator(record->name);
  record->placementRules = placementTable().lookup(record->name);
  record->rejectedDtypes = placementTable().dtypeRules().rejectMask;
  // On the real stack an operator with a composite kernel runs that kernel
  // (made of operators that are classified one by one), so an unlisted
  // composite operator is no CPU fallback.
  if (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
    record->defaultPlacement = runtime::Placement::kAiCore;
  }
  return record;
}

}  // namespace

OperatorRecord& operatorRecord(const c10::OperatorHandle& op) {
  const void* key = &op.schema();
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

OperatorRecord& nativeOperatorRecord(const char* name, const char* overload) {
  return operatorRecord(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload));
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

// What npusim knows about each aten operator it has run: its name, how often
// it ran, and the facts the executor needs per call, computed once per
// operator so that a call does no string work.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "perf/OperatorKind.h"
#include "runtime/PlacementTable.h"

namespace npusim::backend {

// Bits of OperatorRecord::operandRoles.
namespace operand_role {
inline constexpr uint8_t kRead = 1;
inline constexpr uint8_t kWrite = 2;
}  // namespace operand_role

struct OperatorRecord {
  std::string name;                  // "aten::add.Tensor"
  const c10::FunctionSchema* schema = nullptr;  // lives as long as the operator (the records' key)
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> deviceNs{0};  // modelled device time of its calls
  bool acceptsCpuTensors = false;    // indexing ops take CPU index tensors, as on CUDA
  std::vector<size_t> writtenArguments;  // indices of Tensor(a!) arguments
  // How the kernel touches each argument's memory, for pricing (by argument
  // index; see OperandRole). A written argument is also read unless the
  // operator only writes it (out=, copy_'s destination, fills).
  std::vector<uint8_t> operandRoles;
  std::vector<size_t> generatorArguments;  // indices of Generator? arguments
  int indicesArgument = -1;          // the "indices" Tensor?[] argument, for index_dtype rules
  perf::OperatorKind kind = perf::OperatorKind::kOther;  // how the cost model prices it

  // Placement (see OperatorPlacement.h): the table's rules for this overload
  // and what applies when none does.
  runtime::OperatorRules placementRules;
  runtime::Placement defaultPlacement = runtime::Placement::kCpuFallback;
  // The operator that falls back on the real stack when this one does by
  // delegation (a structured operator's functional or in-place form runs its
  // out= kernel: "aten::fmax.out" for aten::fmax); empty otherwise.
  std::string fallbackName;
  runtime::DtypeMask rejectedDtypes = 0;  // dtypes the release line rejects (copied from its table)
  std::array<std::atomic<uint64_t>, 3> placementCalls{};  // by runtime::Placement
  std::atomic<bool> fallbackWarned{false};          // for the process, as torch_npu's warning
  std::atomic<bool> fallbackSourceRecorded{false};  // since the last report reset
  std::string firstFallbackSource;   // guarded by the placement report's mutex
};

// The record of `op`, created on its first call.
OperatorRecord& operatorRecord(const c10::OperatorHandle& op);

// The record of an operator the backend implements natively ("aten::name",
// overload), for counting its calls in the reports; looked up once per call
// site (keep the reference in a function-local static).
OperatorRecord& nativeOperatorRecord(const char* name, const char* overload = "");

// The record of a kernel that no operator of this process names, counted
// under the name the real stack shows for it: torch_npu's npu_lstm, which
// torch_npu launches per layer inside aten::lstm.input, is "npu::npu_lstm".
// Look it up once per call site (keep the reference in a function-local static).
OperatorRecord& kernelRecord(const std::string& qualifiedName);

// Counts one call of a native operator that ran on the AI Core for `deviceNs`.
void countNativeCall(OperatorRecord& record, uint64_t deviceNs);

// name -> calls, for every operator run since the last reset.
std::vector<std::pair<std::string, uint64_t>> operatorCounts();
void resetOperatorCounts();

// Calls `visit` for every record (under the records' lock: `visit` must not
// create records).
void forEachOperatorRecord(const std::function<void(OperatorRecord&)>& visit);

}  // namespace npusim::backend

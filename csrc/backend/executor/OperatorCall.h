// One aten operator call on npu as the executor runs it, whichever way its
// arguments arrive: boxed on a stack (OperatorExecutor.cpp, every operator) or
// unboxed as C++ arguments (UnboxedExecutor.h, the hottest operators). Both
// paths feed the same OperatorCall, so placement, device checks, pricing, L2
// residency, write-back, result adoption and saturation are one code.
//
// A call goes through three steps:
//  1. arguments, in schema order: each npu tensor is noted (dtype facts,
//     device, read/written role) and replaced by a CPU alias over its memory
//     (a meta alias in estimate-only mode); CPU tensors and devices are noted;
//  2. decide(): the placement decision (and torch_npu's errors and warnings);
//  3. after the kernel, complete(): prices the call, gives written arguments
//     what the kernel did to their aliases, and makes the kernel's results
//     npu tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include "backend/device/TensorAliasing.h"
#include "backend/timing/L2Residency.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorRecords.h"
#include "perf/TensorDesc.h"

namespace npusim::backend {

// One tensor the kernel returned. `inList` for the elements of a returned
// tensor list: they are priced and adopted like single results, but not
// touched in the L2 model. After OperatorCall::complete, npu() is the npu
// result: `tensor` made an npu tensor, or, for an in-place or out= result,
// the npu argument itself (`argument`; `tensor` is then reset), which the
// unboxed path returns by reference without taking a new reference to it.
struct KernelResult {
  at::Tensor tensor;
  bool inList = false;
  const at::Tensor* argument = nullptr;
  const at::Tensor& npu() const noexcept { return argument != nullptr ? *argument : tensor; }
};
using KernelResults = c10::SmallVector<KernelResult, 4>;

class OperatorCall {
 public:
  // Borrowed: the caller keeps every argument alive for the whole call (the
  // unboxed path, where the arguments are the caller's references). Owned:
  // the call keeps the npu arguments it replaces by aliases (the boxed path,
  // whose stack drops them). Borrowing matters: taking a reference to a
  // tensor that Python owns makes PyTorch take the GIL.
  enum class Arguments { kBorrowed, kOwned };

  OperatorCall(OperatorRecord& record, bool meta, Arguments arguments) noexcept
      : record_(record), meta_(meta), owned_(arguments == Arguments::kOwned) {}

  bool meta() const noexcept { return meta_; }
  int device() const noexcept { return device_; }
  OperatorRecord& record() const noexcept { return record_; }

  // Step 1. Tensor argument `index` of the schema: returns the kernel's
  // operand for an npu tensor, and an undefined tensor for a CPU or undefined
  // one (the kernel then takes the argument as it is). `keep`: the call
  // keeps its own reference to `tensor` even when arguments are borrowed
  // (`tensor` is a temporary, e.g. an element read out of a c10::List).
  at::Tensor mapTensor(const at::Tensor& tensor, size_t index, bool keep = false);
  // A device argument: npu devices become the CPU (meta in estimate-only mode).
  c10::Device mapDevice(const c10::Device& device);
  // A generator argument, once all tensors are mapped: the npu generator's CPU state.
  at::Generator cpuGenerator(const std::optional<at::Generator>& generator) const;

  // Step 2. Returns the placement (raising torch_npu's errors).
  const PlacementDecision& decide();

  // Step 3. `results` in return order (an undefined tensor where the kernel
  // returned none): checked, priced, then replaced by npu tensors.
  void complete(KernelResults& results);

  // The npu argument whose alias is `kernelTensor` (an in-place or out=
  // result), or nullptr.
  const at::Tensor* npuArgumentFor(const at::Tensor& kernelTensor) const noexcept;

 private:
  struct StorageAlias {
    const c10::StorageImpl* npuImpl;
    const c10::Storage* npu;  // the npu tensor's storage member
    c10::Storage cpu;
    c10::Storage keptNpu;     // the npu storage, kept once its tensor is given another one
    const c10::Storage& npuStorage() const noexcept { return keptNpu ? keptNpu : *npu; }
  };
  struct TensorAlias {
    const at::Tensor* borrowed;  // the caller's tensor (Arguments::kBorrowed)
    at::Tensor owned;            // or the call's own reference to it
    at::Tensor cpu;
    bool written;
    const at::Tensor& npu() const noexcept { return borrowed != nullptr ? *borrowed : owned; }
  };
  struct AdoptedStorage {
    c10::StorageImpl* cpu;
    c10::Storage npu;
  };

  ReusableAliases& aliases() {
    if (aliases_ == nullptr) aliases_ = &ReusableAliases::ofThisThread();
    return *aliases_;
  }
  bool isWrittenArgument(size_t index) const noexcept;
  void noteDtype(const c10::TensorImpl& tensor, bool isIndices, size_t index);
  void noteDevice(const c10::Device& device);
  void noteCpuArgument(const at::Tensor& cpu, bool written, bool isIndices);
  at::Tensor aliasArgument(const at::Tensor& npu, bool written, bool keep);
  void checkDevices() const;
  void checkRecoveryState() const;

  void checkStridedResults(const KernelResults& results) const;
  void queryInputResidency(bool* resident);
  c10::SmallVector<const c10::TensorImpl*, 8> pricedOutputs(const KernelResults& results) const;
  void propagateWrites();
  void takeOverStorage(TensorAlias& entry, c10::StorageImpl* aliasStorage, c10::StorageImpl* npuStorage);
  at::Tensor toNpu(at::Tensor cpu);
  c10::Storage adopt(const at::Tensor& cpu);
  bool isAliasStorage(const c10::StorageImpl* storage) const noexcept;
  void touchOperands(const KernelResults& results, double traffic) const;
  void saturateResults(const KernelResults& results) const;

  OperatorRecord& record_;
  ReusableAliases* aliases_ = nullptr;
  const bool meta_;
  const bool owned_;
  CallFacts facts_;
  PlacementDecision placement_{runtime::Placement::kAiCore, false};
  int device_ = -1;
  c10::Device foreignDevice_{c10::DeviceType::Meta};
  // Every tensor argument the kernel reads, in order, for pricing (kept
  // alive by the caller, by the stack or by tensors_).
  c10::SmallVector<const c10::TensorImpl*, 8> inputs_;
  // Each written argument as the kernel sees it (its alias, which carries any
  // new geometry the kernel gives it): an output for pricing.
  c10::SmallVector<const c10::TensorImpl*, 4> writtenOperands_;
  c10::SmallVector<StorageAlias, 4> storages_;
  c10::SmallVector<TensorAlias, 4> tensors_;
  c10::SmallVector<AdoptedStorage, 2> adopted_;
  // The npu inputs' L2 buffers as queryInputResidency() asked for their residency:
  // touchOperands() touches the same ones unless a written argument's storage
  // was replaced in between (takeOverStorage), so each is looked up once.
  c10::SmallVector<L2Buffer, 8> inputBuffers_;
  bool argumentStorageReplaced_ = false;
};

}  // namespace npusim::backend

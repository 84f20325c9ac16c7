// The operator executor: every aten operator the npu backend does not
// implement natively runs here, as PyTorch's CPU kernel working directly on
// device memory.
//
// For one call: each npu tensor argument is replaced by a CPU alias over the
// same bytes, npu device arguments by cpu, and the generator by the npu
// generator's CPU state; the CPU kernel runs with its allocations routed to
// the device's caching allocator; then written arguments take over any memory
// or geometry the kernel gave their aliases, and results become npu tensors:
// the original tensor for an in-place or out= result, a view of the npu
// storage for a view, and the adopted device memory for a new tensor. No data
// is copied, so results are those of the CPU kernel bit for bit.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <mutex>

#include <torch/library.h>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuGenerator.h"
#include "backend/device/NpuTrace.h"
#include "backend/device/TensorAliasing.h"
#include "backend/executor/OperatorExecutor.h"
#include "backend/layouts/SparseTensors.h"
#include "backend/numerics/Hf32Mode.h"
#include "backend/numerics/InfNanMode.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/L2Residency.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

struct StorageAlias {
  c10::Storage npu;
  c10::Storage cpu;
};

struct TensorAlias {
  at::Tensor npu;
  at::Tensor cpu;
  bool written;
};

struct AdoptedStorage {
  c10::StorageImpl* cpu;
  c10::Storage npu;
};

bool isNpu(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

class OperatorCall {
 public:
  // With `meta`, the aliases are meta tensors (estimate-only mode): the
  // kernel computes shapes, not data.
  OperatorCall(const OperatorRecord& record, bool meta) : record_(record), meta_(meta) {}

  bool meta() const { return meta_; }

  int device() const { return device_; }
  const CallFacts& facts() const { return facts_; }

  // Every tensor argument in order, for pricing: inputs are those the kernel
  // reads (a written argument too, unless the operator only writes it).
  // Kept alive here: the kernel pops them off the stack.
  void noteOperand(const at::Tensor& t, uint8_t role) {
    if (role & operand_role::kRead) inputs_.push_back(t);
  }
  // A written argument as the kernel sees it (its alias, which carries any
  // new geometry the kernel gives it): an output for pricing.
  void noteWrittenOperand(const at::Tensor& kernelView, uint8_t role) {
    if (role & operand_role::kWrite) writtenOperands_.push_back(kernelView);
  }

  c10::SmallVector<perf::TensorDesc, 8> describeInputs() const {
    c10::SmallVector<perf::TensorDesc, 8> descs;
    // The npu inputs' L2 residency, asked for all at once (one lock).
    c10::SmallVector<const at::Tensor*, 8> onDevice;
    for (const auto& t : inputs_) {
      descs.push_back(describeTensor(t));
      if (isNpu(t)) onDevice.push_back(&t);
    }
    if (onDevice.empty()) return descs;
    c10::SmallVector<bool, 8> resident(onDevice.size(), false);
    queryL2Residency(device_, onDevice, resident.data());
    size_t next = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (isNpu(inputs_[i])) descs[i].l2Resident = resident[next++];
    }
    return descs;
  }

  // The kernel's operands are now the most recent data in the L2 (touched
  // in this order, under one lock).
  void touchOperands(const torch::jit::Stack& stack, size_t firstReturn) const {
    c10::SmallVector<const at::Tensor*, 8> touched;
    for (const auto& t : inputs_) {
      if (isNpu(t)) touched.push_back(&t);
    }
    for (const auto& entry : tensors_) {
      if (entry.written) touched.push_back(&entry.npu);
    }
    for (size_t i = firstReturn; i < stack.size(); ++i) {
      if (!stack[i].isTensor()) continue;
      const at::Tensor& t = stack[i].toTensor();
      if (t.defined() && isNpu(t)) touched.push_back(&t);
    }
    touchL2(device_, touched);
  }

  // Outputs for pricing: the written arguments, then each returned tensor
  // that is not one of them (an in-place result is counted once).
  c10::SmallVector<perf::TensorDesc, 8> describeOutputs(const torch::jit::Stack& stack, size_t firstReturn) const {
    c10::SmallVector<perf::TensorDesc, 8> descs;
    for (const auto& t : writtenOperands_) descs.push_back(describeTensor(t));
    auto isWritten = [&](const at::Tensor& t) {
      for (const auto& w : writtenOperands_) {
        if (w.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return true;
      }
      return false;
    };
    for (size_t i = firstReturn; i < stack.size(); ++i) {
      const c10::IValue& value = stack[i];
      if (value.isTensor()) {
        if (!isWritten(value.toTensor())) descs.push_back(describeTensor(value.toTensor()));
      } else if (value.isTensorList()) {
        for (const at::Tensor& t : value.toTensorVector()) {
          if (!isWritten(t)) descs.push_back(describeTensor(t));
        }
      }
    }
    return descs;
  }

  void noteDtype(const at::Tensor& t, bool isIndices, const c10::Argument& argument) {
    const int bit = dtypeBit(t.scalar_type());
    if (bit < 0) return;
    const runtime::DtypeMask mask = runtime::DtypeMask{1} << bit;
    if (facts_.firstDtype < 0) facts_.firstDtype = bit;
    facts_.allDtypes |= mask;
    if (isIndices) facts_.indexDtypes |= mask;
    if (isNpu(t) && t.dim() > 0) facts_.deviceDtypes |= mask;
    if ((mask & record_.rejectedDtypes) != 0 && facts_.rejectedType == c10::ScalarType::Undefined) {
      facts_.rejectedArgument = argument.name();
      facts_.rejectedType = t.scalar_type();
    }
  }

  at::Tensor aliasArgument(const at::Tensor& npu, bool written) {
    noteDevice(npu.device());
    c10::StorageImpl* storage = npu.storage().unsafeGetStorageImpl();
    const c10::Storage* shared = nullptr;
    for (const auto& entry : storages_) {
      if (entry.npu.unsafeGetStorageImpl() == storage) shared = &entry.cpu;
    }
    if (shared == nullptr) {
      storages_.push_back(StorageAlias{
          npu.storage(), meta_ ? makeMetaStorageAlias(npu.storage()) : makeCpuStorageAlias(npu.storage())});
      shared = &storages_.back().cpu;
    }
    at::Tensor cpu = meta_ ? makeMetaAlias(npu, *shared) : makeCpuAlias(npu, shared);
    tensors_.push_back(TensorAlias{npu, cpu, written});
    return cpu;
  }

  void noteCpuArgument(const at::Tensor& cpu, bool written, bool isIndices) {
    // A zero-dimensional CPU tensor read as a scalar may join any device, as on
    // CUDA; one the operator writes (an out= tensor) would receive the result
    // on the wrong device, so CUDA and torch_npu reject it. Indexing operators
    // take CPU index tensors, but their self and values must be on the device.
    const bool scalar = cpu.dim() == 0 && !written;
    const bool cpuIndices = isIndices && record_.acceptsCpuTensors;
    if (!scalar && !cpuIndices && foreignDevice_.type() != c10::DeviceType::CPU) {
      foreignDevice_ = cpu.device();
    }
  }

  void noteDevice(const c10::Device& device) {
    const int index = device.has_index() ? device.index() : runtime::Runtime::instance().currentDevice();
    if (device_ < 0) {
      device_ = index;
    } else if (index != device_) {
      foreignDevice_ = c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index));
    }
  }

  void checkDevices() const {
    if (device_ >= 0 && foreignDevice_.type() != c10::DeviceType::Meta) {
      TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, npu:",
                  device_, " and ", foreignDevice_, "!");
    }
  }

  void mapArguments(const c10::FunctionSchema& schema, torch::jit::Stack& stack, size_t first, size_t count) {
    size_t nextWritten = 0;
    const auto& written = record_.writtenArguments;
    const auto& arguments = schema.arguments();
    for (size_t i = 0; i < count; ++i) {
      const bool isWritten = nextWritten < written.size() && written[nextWritten] == i;
      if (isWritten) ++nextWritten;
      const uint8_t role = i < record_.operandRoles.size() ? record_.operandRoles[i] : operand_role::kRead;
      const bool isIndices = static_cast<int>(i) == record_.indicesArgument;
      c10::IValue& value = stack[first + i];
      if (value.isTensor()) {
        const at::Tensor& t = value.toTensor();
        if (!t.defined()) continue;
        noteDtype(t, isIndices, arguments[i]);
        noteOperand(t, role);
        if (isNpu(t)) {
          value = aliasArgument(t, isWritten);
          noteWrittenOperand(value.toTensor(), role);
        } else {
          noteCpuArgument(t, isWritten, isIndices);
          noteWrittenOperand(t, role);
        }
      } else if (value.isTensorList()) {
        c10::List<at::Tensor> mapped;
        bool any = false;
        for (at::Tensor t : value.toTensorList()) {
          if (t.defined()) {
            noteDtype(t, isIndices, arguments[i]);
            noteOperand(t, role);
          }
          if (t.defined() && isNpu(t)) {
            mapped.push_back(aliasArgument(t, isWritten));
            noteWrittenOperand(mapped.get(mapped.size() - 1), role);
            any = true;
          } else {
            if (t.defined()) noteCpuArgument(t, isWritten, isIndices);
            mapped.push_back(t);
          }
        }
        if (any) value = std::move(mapped);
      } else if (value.isOptionalTensorList()) {
        c10::List<std::optional<at::Tensor>> mapped;
        bool any = false;
        for (std::optional<at::Tensor> t : value.toOptionalTensorList()) {
          if (t.has_value() && t->defined()) {
            noteDtype(*t, isIndices, arguments[i]);
            noteOperand(*t, role);
          }
          if (t.has_value() && t->defined() && isNpu(*t)) {
            mapped.push_back(aliasArgument(*t, isWritten));
            any = true;
          } else {
            if (t.has_value() && t->defined()) noteCpuArgument(*t, isWritten, isIndices);
            mapped.push_back(t);
          }
        }
        if (any) value = std::move(mapped);
      } else if (value.isDevice()) {
        const c10::Device device = value.toDevice();
        if (device.type() == c10::DeviceType::PrivateUse1) {
          noteDevice(device);
          value = c10::IValue(c10::Device(meta_ ? c10::DeviceType::Meta : c10::DeviceType::CPU));
        }
      }
    }
  }

  void mapGenerators(torch::jit::Stack& stack, size_t first) const {
    for (const size_t index : record_.generatorArguments) {
      c10::IValue& value = stack[first + index];
      if (meta_) {
        value = c10::IValue();  // Meta kernels draw no numbers
        continue;
      }
      std::optional<at::Generator> generator;
      if (!value.isNone()) generator = value.toGenerator();
      value = c10::IValue(cpuGeneratorFor(generator, static_cast<c10::DeviceIndex>(device_)));
    }
  }

  // Written arguments take over what the kernel did to their aliases.
  void propagateWrites() {
    for (const auto& entry : tensors_) {
      if (!entry.written) continue;
      c10::StorageImpl* aliasStorage = entry.cpu.storage().unsafeGetStorageImpl();
      c10::StorageImpl* npuStorage = entry.npu.storage().unsafeGetStorageImpl();
      if (aliasStorage->data() != npuStorage->data() || aliasStorage->nbytes() != npuStorage->nbytes()) {
        takeOverStorage(entry, aliasStorage, npuStorage);
      }
      const at::Tensor& cpu = entry.cpu;
      const at::Tensor& npu = entry.npu;
      if (cpu.sizes() != npu.sizes() || cpu.strides() != npu.strides() ||
          cpu.storage_offset() != npu.storage_offset()) {
        npu.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
      }
    }
  }

  // Saturation mode (INF_NAN_MODE_ENABLE=0): the chip clamps what its
  // kernels write, so the new results and written arguments are saturated;
  // views of arguments share their (already saturated) data.
  void saturateResults(const torch::jit::Stack& stack, size_t firstReturn) const {
    for (const auto& entry : tensors_) {
      if (entry.written) applySaturationIfEnabled(entry.npu);
    }
    for (size_t i = firstReturn; i < stack.size(); ++i) {
      if (stack[i].isTensor()) {
        saturateIfNew(stack[i].toTensor());
      } else if (stack[i].isTensorList()) {
        for (const at::Tensor& t : stack[i].toTensorVector()) saturateIfNew(t);
      }
    }
  }

  c10::IValue toNpu(c10::IValue value) {
    if (value.isTensor()) return c10::IValue(toNpu(value.toTensor()));
    if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      for (at::Tensor t : value.toTensorList()) mapped.push_back(toNpu(t));
      return c10::IValue(std::move(mapped));
    }
    if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> mapped;
      for (std::optional<at::Tensor> t : value.toOptionalTensorList()) {
        mapped.push_back(t.has_value() ? std::optional<at::Tensor>(toNpu(*t)) : std::nullopt);
      }
      return c10::IValue(std::move(mapped));
    }
    return value;
  }

 private:
  void takeOverStorage(const TensorAlias& entry, c10::StorageImpl* aliasStorage, c10::StorageImpl* npuStorage) {
    for (const auto& storage : storages_) {
      if (storage.cpu.unsafeGetStorageImpl() == aliasStorage && storage.npu.unsafeGetStorageImpl() != npuStorage) {
        // The kernel pointed the alias at another argument's storage (set_).
        entry.npu.unsafeGetTensorImpl()->set_storage_keep_dtype(storage.npu);
        return;
      }
    }
    if (meta_ && isAliasStorage(aliasStorage)) {
      // The kernel grew the storage (out= resize): new device memory, no data.
      const c10::Storage grown = allocateNpuStorageFor(entry.cpu.storage(), device_);
      npuStorage->set_data_ptr_noswap(std::move(grown.unsafeGetStorageImpl()->mutable_data_ptr()));
      npuStorage->set_nbytes(aliasStorage->nbytes());
      return;
    }
    if (owningDevice(aliasStorage->data_ptr()) == device_ && isAliasStorage(aliasStorage)) {
      // The kernel grew the storage: the new block is device memory already.
      c10::DataPtr grown = std::move(aliasStorage->mutable_data_ptr());
      grown.unsafe_set_device(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_)));
      npuStorage->set_data_ptr_noswap(std::move(grown));
      npuStorage->set_nbytes(aliasStorage->nbytes());
      // Keep the alias consistent for any later argument sharing it.
      aliasStorage->set_data_ptr_noswap(
          c10::DataPtr(const_cast<void*>(npuStorage->data()), c10::Device(c10::DeviceType::CPU)));
      return;
    }
    entry.npu.unsafeGetTensorImpl()->set_storage_keep_dtype(adopt(entry.cpu));
  }

  void saturateIfNew(const at::Tensor& result) const {
    if (!result.defined()) return;
    for (const auto& entry : storages_) {
      if (entry.npu.unsafeGetStorageImpl() == result.storage().unsafeGetStorageImpl()) return;
    }
    applySaturationIfEnabled(result);
  }

  bool isAliasStorage(const c10::StorageImpl* storage) const {
    for (const auto& entry : storages_) {
      if (entry.cpu.unsafeGetStorageImpl() == storage) return true;
    }
    return false;
  }

  c10::Storage adopt(const at::Tensor& cpu) {
    c10::StorageImpl* storage = cpu.storage().unsafeGetStorageImpl();
    for (const auto& entry : adopted_) {
      if (entry.cpu == storage) return entry.npu;
    }
    adopted_.push_back(AdoptedStorage{storage, meta_ ? allocateNpuStorageFor(cpu.storage(), device_)
                                                     : adoptAsNpuStorage(cpu.storage(), device_)});
    return adopted_.back().npu;
  }

  at::Tensor toNpu(const at::Tensor& cpu) {
    if (!cpu.defined() || isNpu(cpu)) return cpu;
    for (const auto& entry : tensors_) {
      if (entry.cpu.unsafeGetTensorImpl() == cpu.unsafeGetTensorImpl()) return entry.npu;  // in-place / out=
    }
    // A quantized result (a CPU fallback such as quantize_per_tensor.tensor_qparams) moves to the device as
    // torch_npu's CPU fallback moves it, with Tensor.to: PyTorch then needs kernels that QuantizedPrivateUse1
    // lacks on the 2.13 line and raises its dispatcher error, where adopting the memory would make a dense
    // tensor of a quantized dtype.
    if (cpu.is_quantized()) {
      return cpu.to(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_)));
    }
    c10::StorageImpl* storage = cpu.storage().unsafeGetStorageImpl();
    for (const auto& entry : storages_) {
      if (entry.cpu.unsafeGetStorageImpl() == storage) return npuViewOf(entry.npu, cpu);  // a view of an input
    }
    return npuViewOf(adopt(cpu), cpu);  // a new tensor
  }

  const OperatorRecord& record_;
  const bool meta_;
  CallFacts facts_;
  c10::SmallVector<at::Tensor, 8> inputs_;
  c10::SmallVector<at::Tensor, 4> writtenOperands_;
  int device_ = -1;
  c10::Device foreignDevice_{c10::DeviceType::Meta};
  c10::SmallVector<StorageAlias, 4> storages_;
  c10::SmallVector<TensorAlias, 4> tensors_;
  c10::SmallVector<AdoptedStorage, 2> adopted_;
};

// Estimate-only mode: the operator's Meta kernel computes the outputs' shapes;
// operators whose output size depends on data follow npusim's documented rule.
void runMetaKernel(const c10::OperatorHandle& op, const OperatorRecord& record, torch::jit::Stack& stack,
                   size_t first) {
  const std::vector<c10::IValue> arguments(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
  if (auto outputs = dataDependentMetaOutputs(record.name, arguments)) {
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
    for (auto& output : *outputs) stack.push_back(std::move(output));
    return;
  }
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &stack);
  } catch (const c10::Error& error) {
    TORCH_CHECK(false, "npusim estimate-only mode cannot infer the outputs of ", record.name,
                " without running it (no Meta kernel): ", error.what_without_backtrace());
  }
}

}  // namespace

void executeOnNpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  // First, before any lock of the backend: a forked child's npu tensors are its parent's.
  NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().checkNotForkedChild());
  OperatorRecord& record = operatorRecord(op);
  record.calls.fetch_add(1, std::memory_order_relaxed);
  const auto& schema = op.schema();
  const size_t argumentCount = schema.arguments().size();
  const size_t first = stack->size() - argumentCount;

  OperatorCall call(record, estimateOnly());
  call.mapArguments(schema, *stack, first, argumentCount);
  if (call.device() < 0) call.noteDevice(c10::Device(c10::DeviceType::PrivateUse1));
  call.checkDevices();
  const PlacementDecision placement = decidePlacement(record, call.facts());
  call.mapGenerators(*stack, first);

  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(call.device())));
  if (call.meta()) {
    runMetaKernel(op, record, *stack, first);
  } else {
    roundMatmulOperandsForHf32(record.kind, *stack, first, argumentCount, record.writtenArguments);
    const ScopedOutputDevice outputs(call.device());
    // The sanitizer's kernel mode hears of each kernel around its launch.
    traceKernel(TraceKind::kAclStartExecution, record.name.c_str());
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    traceKernel(TraceKind::kAclFinishExecution, record.name.c_str());
  }
  const size_t returnCount = schema.returns().size();
  const size_t firstReturn = stack->size() - returnCount;
  checkStridedResults(record.name.c_str(), *stack, firstReturn);
  const auto outputs = call.describeOutputs(*stack, firstReturn);
  // A data-dependent output size (nonzero, boolean indexing, ...) makes the
  // host wait for the device before it can go on.
  const auto inputs = call.describeInputs();
  const runtime::SimTimeNs deviceNs =
      chargeOperator(call.device(), record.kind, inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                     static_cast<int>(outputs.size()), placement.placement, placement.sync);
  record.deviceNs.fetch_add(deviceNs, std::memory_order_relaxed);
  if (placement.sync) recordSyncPoint(record.name);
  call.propagateWrites();

  for (size_t i = firstReturn; i < stack->size(); ++i) {
    (*stack)[i] = call.toNpu(std::move((*stack)[i]));
  }
  if (placement.placement == runtime::Placement::kAiCore) call.touchOperands(*stack, firstReturn);
  if (saturationModeEnabled() && !call.meta()) call.saturateResults(*stack, firstReturn);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&executeOnNpu>());
}

size_t routeCpuKernelsThroughExecutor() {
  // An operator with both a CPU kernel and a CompositeExplicitAutograd one
  // would run the composite kernel on npu (for native_layer_norm a math
  // decomposition whose results differ from the CPU kernel's in the last
  // bits; for structured operators an extra dispatch through the out= form).
  // Registering the executor for them directly makes npu run the CPU kernel.
  static std::once_flag routed;
  static size_t count = 0;
  std::call_once(routed, [] {
    static auto* library = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                                              __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const auto& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      const auto op = dispatcher.findOp(name);
      if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
      // torch_npu runs the multi-tensor _foreach_* operators as one fused
      // kernel each; ATen's composite version would launch one operator per
      // tensor. Running the composite on CPU aliases in one executor call
      // gives the same numbers with the real stack's launch count.
      const bool multiTensor = name.name.rfind("aten::_foreach_", 0) == 0;
      if (!multiTensor && !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) continue;
      // A CompositeImplicitAutograd kernel next to a CPU kernel (mish_backward,
      // silu_backward, ...) would decompose on npu with other rounding.
      if (!op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
          !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) &&
          !(op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) && !multiTensor)) {
        continue;
      }
      const std::string qualified = name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      library->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&executeOnNpu>());
      ++count;
    }
  });
  return count;
}

}  // namespace npusim::backend

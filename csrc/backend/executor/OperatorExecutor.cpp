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
#include "backend/device/NpuTrace.h"
#include "backend/executor/OperatorCall.h"
#include "backend/executor/OperatorExecutor.h"
#include "backend/numerics/Fp32Accumulation.h"
#include "backend/numerics/Hf32Mode.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorRecords.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

// The arguments on the stack become the kernel's: npu tensors (alone or in
// lists) their aliases, npu devices the CPU.
void mapArguments(OperatorCall& call, torch::jit::Stack& stack, size_t first, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    c10::IValue& value = stack[first + i];
    if (value.isTensor()) {
      at::Tensor alias = call.mapTensor(value.toTensor(), i);
      if (alias.defined()) value = std::move(alias);
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      bool any = false;
      for (at::Tensor t : value.toTensorList()) {
        at::Tensor alias = call.mapTensor(t, i);
        any = any || alias.defined();
        mapped.push_back(alias.defined() ? std::move(alias) : std::move(t));
      }
      if (any) value = std::move(mapped);
    } else if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> mapped;
      bool any = false;
      for (std::optional<at::Tensor> t : value.toOptionalTensorList()) {
        at::Tensor alias = t.has_value() ? call.mapTensor(*t, i) : at::Tensor();
        any = any || alias.defined();
        mapped.push_back(alias.defined() ? std::optional<at::Tensor>(std::move(alias)) : std::move(t));
      }
      if (any) value = std::move(mapped);
    } else if (value.isDevice()) {
      const c10::Device device = value.toDevice();
      if (device.type() == c10::DeviceType::PrivateUse1) value = c10::IValue(call.mapDevice(device));
    }
  }
}

void mapGenerators(const OperatorCall& call, torch::jit::Stack& stack, size_t first) {
  for (const size_t index : call.record().generatorArguments) {
    c10::IValue& value = stack[first + index];
    if (call.meta()) {
      value = c10::IValue();  // Meta kernels draw no numbers
      continue;
    }
    std::optional<at::Generator> generator;
    if (!value.isNone()) generator = value.toGenerator();
    value = c10::IValue(call.cpuGenerator(generator));
  }
}

// What a return slot of the stack held, to put the npu results back.
enum class ReturnSlot : uint8_t { kOther, kTensor, kTensorList, kOptionalTensorList };

// The kernel's returns, moved off the stack (so that a new result is held
// only here and can become the npu tensor in place) and flattened for
// OperatorCall::complete.
KernelResults takeResults(torch::jit::Stack& stack, size_t firstReturn, c10::SmallVectorImpl<ReturnSlot>& slots,
                          c10::SmallVectorImpl<size_t>& listSizes) {
  KernelResults results;
  for (size_t i = firstReturn; i < stack.size(); ++i) {
    c10::IValue& value = stack[i];
    if (value.isTensor()) {
      slots.push_back(ReturnSlot::kTensor);
      results.push_back(KernelResult{std::move(value).toTensor(), false});
    } else if (value.isTensorList()) {
      slots.push_back(ReturnSlot::kTensorList);
      c10::List<at::Tensor> list = std::move(value).toTensorList();
      listSizes.push_back(list.size());
      for (size_t k = 0; k < list.size(); ++k) results.push_back(KernelResult{list.extract(k), true});
    } else if (value.isOptionalTensorList()) {
      slots.push_back(ReturnSlot::kOptionalTensorList);
      c10::List<std::optional<at::Tensor>> list = std::move(value).toOptionalTensorList();
      listSizes.push_back(list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        std::optional<at::Tensor> t = list.extract(k);
        // An absent element stays absent: marked by an undefined tensor.
        results.push_back(KernelResult{t.has_value() && t->defined() ? std::move(*t) : at::Tensor(), true});
      }
    } else {
      slots.push_back(ReturnSlot::kOther);
    }
  }
  return results;
}

at::Tensor takeNpu(KernelResult& result) {
  return result.argument != nullptr ? *result.argument : std::move(result.tensor);
}

// The npu results back in the return slots.
void putResults(torch::jit::Stack& stack, size_t firstReturn, c10::ArrayRef<ReturnSlot> slots,
                c10::ArrayRef<size_t> listSizes, KernelResults& results) {
  size_t next = 0, nextList = 0;
  for (size_t i = firstReturn; i < stack.size(); ++i) {
    switch (slots[i - firstReturn]) {
      case ReturnSlot::kTensor: stack[i] = takeNpu(results[next++]); break;
      case ReturnSlot::kTensorList: {
        c10::List<at::Tensor> mapped;
        for (size_t n = listSizes[nextList++]; n > 0; --n) mapped.push_back(takeNpu(results[next++]));
        stack[i] = std::move(mapped);
        break;
      }
      case ReturnSlot::kOptionalTensorList: {
        c10::List<std::optional<at::Tensor>> mapped;
        for (size_t n = listSizes[nextList++]; n > 0; --n) {
          at::Tensor t = takeNpu(results[next++]);
          mapped.push_back(t.defined() ? std::optional<at::Tensor>(std::move(t)) : std::nullopt);
        }
        stack[i] = std::move(mapped);
        break;
      }
      case ReturnSlot::kOther: break;
    }
  }
}

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

  // The stack drops the npu arguments it hands over for aliases: the call keeps them.
  OperatorCall call(record, estimateOnly(), OperatorCall::Arguments::kOwned);
  mapArguments(call, *stack, first, argumentCount);
  call.decide();
  mapGenerators(call, *stack, first);

  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(call.device())));
  if (call.meta()) {
    runMetaKernel(op, record, *stack, first);
  } else {
    roundMatmulOperandsForHf32(record.kind, *stack, first, argumentCount, record.writtenArguments);
    // fp16/bf16 products run as the fp32 kernel on fp32 copies (host scratch), rounded back into
    // device memory (Fp32Accumulation.h).
    Fp32Accumulation fp32(record.kind, *stack, first, argumentCount, record.writtenArguments);
    // The sanitizer's kernel mode hears of each kernel around its launch.
    traceKernel(TraceKind::kAclStartExecution, record.name.c_str());
    if (fp32.active()) {
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
      const ScopedOutputDevice outputs(call.device());
      fp32.roundResults(*stack, stack->size() - schema.returns().size());
    } else {
      const ScopedOutputDevice outputs(call.device());
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    }
    traceKernel(TraceKind::kAclFinishExecution, record.name.c_str());
  }
  const size_t firstReturn = stack->size() - schema.returns().size();
  c10::SmallVector<ReturnSlot, 4> slots;
  c10::SmallVector<size_t, 2> listSizes;
  KernelResults results = takeResults(*stack, firstReturn, slots, listSizes);
  call.complete(results);
  putResults(*stack, firstReturn, slots, listSizes, results);
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

// The executor's unboxed path: the hottest aten operators run on npu without
// boxing their arguments into a stack.
//
// The boxed executor (OperatorExecutor.cpp) serves every operator, but boxing
// costs more than the work of a small kernel: each argument is copied into an
// IValue, and copying a tensor that Python owns makes PyTorch take the GIL (a
// C++ reference to such a tensor keeps its Python object alive), twice per
// tensor and call. For the operators listed in UnboxedOperators.cpp npusim
// registers this template instead: it takes the operator's own C++ signature
// (at::_ops::<name>::schema), borrows its arguments, maps them through the
// same OperatorCall as the boxed path (so placement, checks, pricing, L2,
// write-back, adoption and saturation are the boxed path's), and calls the
// CPU kernel unboxed (at::_ops::<name>::redispatch with the CPU key).
//
// Calls the unboxed path does not take go to the boxed executor unchanged:
// estimate-only mode (meta kernels, data-dependent outputs), matrix products
// while matmul HF32 rounds their operands, and any call while
// setUnboxedExecutorEnabled(false) (the tests compare both paths with it).
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
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

// On by default; off sends every call to the boxed executor.
bool unboxedExecutorEnabled() noexcept;
void setUnboxedExecutorEnabled(bool enabled) noexcept;

// Registers the unboxed kernels of the Unboxed*Operators.cpp lists for every
// listed operator that would otherwise reach the boxed executor. Called once,
// before routeCpuKernelsThroughExecutor; returns how many it registered.
size_t registerUnboxedExecutor();

// The lists (one file each, compiled in parallel).
size_t registerUnboxedElementwiseOperators(torch::Library& library);
size_t registerUnboxedNnOperators(torch::Library& library);
size_t registerUnboxedForeachOperators(torch::Library& library);

namespace unboxed {

// What the kernel receives for one argument of C++ type T: get() gives it.
// Anything that is neither a tensor, a tensor list, a device nor a generator
// passes through unchanged.
template <class T, class = void>
struct KernelArgument {
  T value;
  KernelArgument(OperatorCall&, T argument, size_t) : value(std::forward<T>(argument)) {}
  T get(const OperatorCall&) { return std::forward<T>(value); }
};

template <>
struct KernelArgument<const at::Tensor&> {
  const at::Tensor& original;
  at::Tensor alias;
  KernelArgument(OperatorCall& call, const at::Tensor& argument, size_t index)
      : original(argument), alias(call.mapTensor(argument, index)) {}
  const at::Tensor& get(const OperatorCall&) const { return alias.defined() ? alias : original; }
};

template <>
struct KernelArgument<at::Tensor&> {
  at::Tensor& original;
  at::Tensor alias;
  KernelArgument(OperatorCall& call, at::Tensor& argument, size_t index)
      : original(argument), alias(call.mapTensor(argument, index)) {}
  at::Tensor& get(const OperatorCall&) { return alias.defined() ? alias : original; }
};

template <>
struct KernelArgument<const std::optional<at::Tensor>&> {
  const std::optional<at::Tensor>& original;
  std::optional<at::Tensor> alias;
  KernelArgument(OperatorCall& call, const std::optional<at::Tensor>& argument, size_t index) : original(argument) {
    if (!argument.has_value()) return;
    at::Tensor mapped = call.mapTensor(*argument, index);
    if (mapped.defined()) alias = std::move(mapped);
  }
  const std::optional<at::Tensor>& get(const OperatorCall&) const { return alias.has_value() ? alias : original; }
};

// A list argument's elements, each mapped like a single tensor.
struct MappedTensors {
  c10::SmallVector<at::Tensor, 4> tensors;
  bool any = false;
  template <class List>
  void map(OperatorCall& call, const List& list, size_t index) {
    for (const at::Tensor& t : list) {
      at::Tensor alias = call.mapTensor(t, index);
      any = any || alias.defined();
      tensors.push_back(alias.defined() ? std::move(alias) : t);
    }
  }
};

template <>
struct KernelArgument<at::TensorList> {
  at::TensorList original;
  MappedTensors mapped;
  KernelArgument(OperatorCall& call, at::TensorList argument, size_t index) : original(argument) {
    mapped.map(call, argument, index);
  }
  at::TensorList get(const OperatorCall&) const { return mapped.any ? at::TensorList(mapped.tensors) : original; }
};

template <>
struct KernelArgument<const at::ITensorListRef&> {
  const at::ITensorListRef& original;
  MappedTensors mapped;
  KernelArgument(OperatorCall& call, const at::ITensorListRef& argument, size_t index) : original(argument) {
    mapped.map(call, argument, index);
  }
  at::ITensorListRef get(const OperatorCall&) const {
    return mapped.any ? at::ITensorListRef(at::TensorList(mapped.tensors)) : original;
  }
};

template <>
struct KernelArgument<const c10::List<std::optional<at::Tensor>>&> {
  const c10::List<std::optional<at::Tensor>>& original;
  c10::List<std::optional<at::Tensor>> mapped;
  bool any = false;
  KernelArgument(OperatorCall& call, const c10::List<std::optional<at::Tensor>>& argument, size_t index)
      : original(argument) {
    for (size_t k = 0; k < argument.size(); ++k) {
      std::optional<at::Tensor> element = argument.get(k);
      // The element is a copy: the call keeps it (the list already holds a
      // reference, so this takes no GIL).
      at::Tensor alias = element.has_value() ? call.mapTensor(*element, index, /*keep=*/true) : at::Tensor();
      any = any || alias.defined();
      mapped.push_back(alias.defined() ? std::optional<at::Tensor>(std::move(alias)) : std::move(element));
    }
  }
  const c10::List<std::optional<at::Tensor>>& get(const OperatorCall&) const { return any ? mapped : original; }
};

template <>
struct KernelArgument<std::optional<c10::Device>> {
  std::optional<c10::Device> value;
  KernelArgument(OperatorCall& call, std::optional<c10::Device> argument, size_t) : value(argument) {
    if (value.has_value()) value = call.mapDevice(*value);
  }
  std::optional<c10::Device> get(const OperatorCall&) const { return value; }
};

template <>
struct KernelArgument<c10::Device> {
  c10::Device value;
  KernelArgument(OperatorCall& call, c10::Device argument, size_t) : value(call.mapDevice(argument)) {}
  c10::Device get(const OperatorCall&) const { return value; }
};

template <>
struct KernelArgument<std::optional<at::Generator>> {
  std::optional<at::Generator> original;
  KernelArgument(OperatorCall&, std::optional<at::Generator> argument, size_t) : original(std::move(argument)) {}
  // Read when the kernel is called, after decide(): the device is known.
  std::optional<at::Generator> get(const OperatorCall& call) const { return call.cpuGenerator(original); }
};

// The kernel's return value: into KernelResults for OperatorCall::complete,
// and back out as the npu result.
template <class R>
struct KernelReturn;

template <>
struct KernelReturn<at::Tensor> {
  static void collect(at::Tensor&& result, KernelResults& results) {
    results.push_back(KernelResult{std::move(result), false});
  }
  static at::Tensor npu(KernelResults& results, size_t& next) {
    KernelResult& result = results[next++];
    return result.argument != nullptr ? *result.argument : std::move(result.tensor);
  }
};

// In-place and out= operators return their written argument: the npu
// argument itself, by reference.
template <>
struct KernelReturn<at::Tensor&> {
  static void collect(at::Tensor& result, KernelResults& results) { results.push_back(KernelResult{result, false}); }
  static at::Tensor& npu(KernelResults& results, size_t& next) {
    KernelResult& result = results[next++];
    TORCH_INTERNAL_ASSERT(result.argument != nullptr, "npusim: an in-place kernel returned a tensor it was not given");
    return const_cast<at::Tensor&>(*result.argument);
  }
};

template <>
struct KernelReturn<std::vector<at::Tensor>> {
  static void collect(std::vector<at::Tensor>&& result, KernelResults& results, size_t& count) {
    count = result.size();
    for (auto& t : result) results.push_back(KernelResult{std::move(t), true});
  }
};

template <class... Ts>
struct KernelReturn<std::tuple<Ts...>> {
  static void collect(std::tuple<Ts...>&& result, KernelResults& results) {
    std::apply([&](auto&&... t) { (KernelReturn<at::Tensor>::collect(std::move(t), results), ...); }, std::move(result));
  }
  static std::tuple<Ts...> npu(KernelResults& results, size_t& next) {
    // Braced initialisation evaluates left to right: the results in order.
    return std::tuple<Ts...>{KernelReturn<Ts>::npu(results, next)...};
  }
};

// The dtype of the first floating tensor argument (Undefined if none).
inline c10::ScalarType floatingDtypeOf(const at::Tensor& t) noexcept {
  return t.defined() && c10::isFloatingType(t.scalar_type()) ? t.scalar_type() : c10::ScalarType::Undefined;
}
inline c10::ScalarType floatingDtypeOf(const std::optional<at::Tensor>& t) noexcept {
  return t.has_value() ? floatingDtypeOf(*t) : c10::ScalarType::Undefined;
}
template <class T>
c10::ScalarType floatingDtypeOf(const T&) noexcept {
  return c10::ScalarType::Undefined;
}
template <class... Args>
c10::ScalarType firstFloatingDtype(const Args&... args) noexcept {
  c10::ScalarType first = c10::ScalarType::Undefined;
  ((first = first == c10::ScalarType::Undefined ? floatingDtypeOf(args) : first), ...);
  return first;
}

template <class Op, class Signature = typename Op::schema>
struct UnboxedKernel;

template <class Op, class Return, class... Args>
struct UnboxedKernel<Op, Return(Args...)> {
  static const c10::OperatorHandle& handle() {
    static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    return op;
  }

  static Return boxed(Args... args) {
    static const c10::BoxedKernel kernel = c10::BoxedKernel::makeFromFunction<&executeOnNpu>();
    return c10::impl::BoxedKernelWrapper<Return(Args...)>::call(
        kernel, handle(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), std::forward<Args>(args)...);
  }

  static Return call(Args... args) {
    // Looked up once: a record keeps its address for the process.
    static OperatorRecord& record = operatorRecord(handle());
    // The sanitizer's kernel mode hears of each kernel from the boxed executor.
    if (!unboxedExecutorEnabled() || estimateOnly() || traceMode() == TraceMode::kKernel ||
        roundsMatmulOperandsForHf32(record.kind) ||
        Fp32Accumulation::applies(record.kind, firstFloatingDtype(args...))) {
      return boxed(std::forward<Args>(args)...);
    }
    return run(record, std::index_sequence_for<Args...>{}, std::forward<Args>(args)...);
  }

  template <size_t... I>
  static Return run(OperatorRecord& record, std::index_sequence<I...>, Args... args) {
    // First, before any lock of the backend: a forked child's npu tensors are its parent's.
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().checkNotForkedChild());
    record.calls.fetch_add(1, std::memory_order_relaxed);
    OperatorCall call(record, /*meta=*/false, OperatorCall::Arguments::kBorrowed);
    // Braced initialisation maps the arguments left to right, in schema order.
    std::tuple<KernelArgument<Args>...> kernelArguments{KernelArgument<Args>(call, std::forward<Args>(args), I)...};
    call.decide();

    const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(call.device())));
    KernelResults results;
    if constexpr (std::is_void_v<Return>) {
      {
        const ScopedOutputDevice outputs(call.device());
        Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), std::get<I>(kernelArguments).get(call)...);
      }
      call.complete(results);
    } else if constexpr (std::is_same_v<Return, std::vector<at::Tensor>>) {
      size_t count = 0;
      {
        const ScopedOutputDevice outputs(call.device());
        KernelReturn<Return>::collect(
            Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), std::get<I>(kernelArguments).get(call)...),
            results, count);
      }
      call.complete(results);
      std::vector<at::Tensor> npu;
      npu.reserve(count);
      for (auto& result : results) npu.push_back(result.argument != nullptr ? *result.argument : std::move(result.tensor));
      return npu;
    } else {
      {
        const ScopedOutputDevice outputs(call.device());
        KernelReturn<Return>::collect(
            Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), std::get<I>(kernelArguments).get(call)...),
            results);
      }
      call.complete(results);
      size_t next = 0;
      return KernelReturn<Return>::npu(results, next);
    }
  }
};

// Registers UnboxedKernel<Op> for PrivateUse1 when the operator would reach
// the boxed executor: it has no npu kernel of its own and either a CPU kernel
// (the executor's fallback or route) or is a multi-tensor _foreach_ operator
// (routed as one fused kernel). Returns 1 if it registered.
template <class Op>
size_t registerKernel(torch::Library& library) {
  const auto op = c10::Dispatcher::singleton().findOp(c10::OperatorName(Op::name, Op::overload_name));
  if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) return 0;
  const std::string_view name(Op::name);
  const bool multiTensor = name.rfind("aten::_foreach_", 0) == 0;
  if (!multiTensor && !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) return 0;
  const std::string_view overload(Op::overload_name);
  const std::string qualified =
      std::string(name.substr(6)) + (overload.empty() ? std::string() : "." + std::string(overload));
  library.impl(qualified.c_str(), torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(UnboxedKernel<Op>::call)));
  return 1;
}

template <class... Ops>
size_t registerKernels(torch::Library& library) {
  return (registerKernel<Ops>(library) + ... + size_t{0});
}

}  // namespace unboxed
}  // namespace npusim::backend

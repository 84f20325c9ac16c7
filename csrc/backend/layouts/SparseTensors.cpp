// Sparse and other non-strided layouts on npu, as torch_npu has them.
//
// - COO tensors live on the device: their indices and values are npu tensors
//   and every sparse operator runs PyTorch's CPU sparse kernel on CPU aliases
//   of them (no copies), its new indices and values allocated from device
//   memory, as the dense executor does for dense operators.
// - Compressed tensors (CSR, CSC, BSR, BSC) may be built on npu from npu
//   index and value tensors and moved between host and device; their
//   structure is readable. torch_npu computes nothing on them on the device:
//   _sparse_csr_sum and _sparse_csr_prod run on the CPU with its warning (or
//   its strict-mode error), any other operator has no npu kernel.
// - Converting a dense npu tensor to a compressed or mkldnn layout is refused
//   with torch_npu's text for an operator the NPU does not support; the CPU
//   kernel would otherwise hand back a host-only layout.
#include "backend/layouts/SparseTensors.h"

#include <ATen/SparseTensorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_sparse_csr_prod.h>
#include <ATen/ops/_sparse_csr_sum.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <atomic>
#include <mutex>

#include "backend/device/NpuAllocator.h"
#include "backend/device/NpuErrors.h"
#include "backend/device/NpuTensors.h"
#include "backend/device/TensorAliasing.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

std::string operatorName(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
}

[[noreturn]] void notSupportedOnNpu(const std::string& name) {
  TORCH_CHECK(false, "CAUTION: The operator '", name, "' is not currently supported on the NPU backend.",
              errorSuffix(ErrorModule::kOps, ErrorKind::kFeatureNotSupported));
}

// One sparse operator call: npu arguments become CPU aliases, the CPU kernel
// runs, and its results become npu tensors over the same memory.
class SparseCall {
 public:
  void mapArguments(const c10::FunctionSchema& schema, torch::jit::Stack& stack, size_t first) {
    const auto& arguments = schema.arguments();
    for (size_t i = 0; i < arguments.size(); ++i) {
      const bool written = arguments[i].alias_info() != nullptr && arguments[i].alias_info()->isWrite();
      c10::IValue& value = stack[first + i];
      if (value.isTensor()) {
        const at::Tensor& t = value.toTensor();
        if (isNpuTensor(t)) value = alias(t, written);
      } else if (value.isTensorList()) {
        c10::List<at::Tensor> mapped;
        for (at::Tensor t : value.toTensorList()) mapped.push_back(isNpuTensor(t) ? alias(t, written) : t);
        value = std::move(mapped);
      } else if (value.isOptionalTensorList()) {
        c10::List<std::optional<at::Tensor>> mapped;
        for (std::optional<at::Tensor> t : value.toOptionalTensorList()) {
          mapped.push_back(t.has_value() && isNpuTensor(*t) ? std::optional<at::Tensor>(alias(*t, written)) : t);
        }
        value = std::move(mapped);
      } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
        noteDevice(value.toDevice().has_index() ? value.toDevice().index() : runtime::Runtime::currentDevice());
        value = c10::IValue(c10::Device(c10::DeviceType::CPU));
      }
    }
    if (device_ < 0) device_ = runtime::Runtime::currentDevice();
  }

  int device() const { return device_; }

  // The dense parts of the arguments (a COO tensor's indices and values), for pricing.
  c10::SmallVector<perf::TensorDesc, 8> describeInputs() const {
    c10::SmallVector<perf::TensorDesc, 8> descs;
    for (const auto& entry : tensors_) {
      if (entry.cpu.layout() == c10::kStrided) {
        descs.push_back(describeTensor(entry.cpu));
      } else {
        auto* impl = at::sparse::get_sparse_impl(entry.cpu);
        descs.push_back(describeTensor(impl->indices()));
        descs.push_back(describeTensor(impl->values()));
      }
    }
    return descs;
  }

  // Written arguments take over what the kernel did to their aliases.
  void propagateWrites() {
    for (auto& entry : tensors_) {
      if (!entry.written) continue;
      if (entry.npu.is_sparse()) {
        auto* aliasImpl = at::sparse::get_sparse_impl(entry.cpu);
        auto* npuImpl = at::sparse::get_sparse_impl(entry.npu);
        at::Tensor indices = toNpuDense(aliasImpl->indices());
        at::Tensor values = toNpuDense(aliasImpl->values());
        npuImpl->raw_resize_(aliasImpl->sparse_dim(), aliasImpl->dense_dim(), entry.cpu.sizes());
        npuImpl->set_indices_and_values_unsafe(indices, values);
        npuImpl->set_coalesced(aliasImpl->coalesced());
      } else if (entry.cpu.storage().data() != entry.npu.storage().data() ||
                 entry.cpu.sizes() != entry.npu.sizes() || entry.cpu.strides() != entry.npu.strides()) {
        // The kernel resized a dense output.
        at::Tensor adopted = toNpuDense(entry.cpu);
        entry.npu.unsafeGetTensorImpl()->set_storage_keep_dtype(adopted.storage());
        entry.npu.unsafeGetTensorImpl()->set_sizes_and_strides(adopted.sizes(), adopted.strides(),
                                                                adopted.storage_offset());
      }
    }
  }

  c10::IValue toNpu(const c10::IValue& value) {
    if (value.isTensor()) return c10::IValue(toNpu(value.toTensor()));
    if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      for (at::Tensor t : value.toTensorList()) mapped.push_back(toNpu(t));
      return c10::IValue(std::move(mapped));
    }
    return value;
  }

 private:
  struct TensorAlias {
    at::Tensor npu;
    at::Tensor cpu;
    bool written;
  };
  struct StorageAlias {
    c10::Storage npu;
    c10::Storage cpu;
  };

  void noteDevice(int device) {
    if (device_ < 0) device_ = device;
    TORCH_CHECK(device == device_,
                "Expected all tensors to be on the same device, but found at least two devices, npu:", device_,
                " and npu:", device, "!");
  }

  at::Tensor denseAlias(const at::Tensor& npu) {
    for (const auto& entry : storages_) {
      if (entry.npu.unsafeGetStorageImpl() == npu.storage().unsafeGetStorageImpl()) {
        return makeCpuAlias(npu, &entry.cpu);
      }
    }
    storages_.push_back(StorageAlias{npu.storage(), makeCpuStorageAlias(npu.storage())});
    return makeCpuAlias(npu, &storages_.back().cpu);
  }

  at::Tensor alias(const at::Tensor& npu, bool written) {
    noteDevice(npuDeviceIndex(npu));
    at::Tensor cpu;
    if (npu.layout() == c10::kStrided) {
      cpu = denseAlias(npu);
    } else if (npu.layout() == c10::kSparse) {
      auto* impl = at::sparse::get_sparse_impl(npu);
      cpu = at::_sparse_coo_tensor_with_dims_and_tensors(
          impl->sparse_dim(), impl->dense_dim(), npu.sizes(), denseAlias(impl->indices()), denseAlias(impl->values()),
          npu.options().device(c10::DeviceType::CPU), impl->coalesced());
    } else {
      TORCH_CHECK_NOT_IMPLEMENTED(false, "npu tensors with layout ", npu.layout(),
                                  " have no kernels on the NPU backend");
    }
    tensors_.push_back(TensorAlias{npu, cpu, written});
    return cpu;
  }

  at::Tensor toNpuDense(const at::Tensor& cpu) {
    for (const auto& entry : storages_) {
      if (entry.cpu.unsafeGetStorageImpl() == cpu.storage().unsafeGetStorageImpl()) return npuViewOf(entry.npu, cpu);
    }
    return adoptAsNpuTensor(cpu, device_);
  }

  at::Tensor toNpu(const at::Tensor& cpu) {
    if (!cpu.defined() || isNpuTensor(cpu)) return cpu;
    for (const auto& entry : tensors_) {
      if (entry.cpu.unsafeGetTensorImpl() == cpu.unsafeGetTensorImpl()) return entry.npu;  // in-place / out=
    }
    if (cpu.layout() == c10::kStrided) return toNpuDense(cpu);
    TORCH_CHECK_NOT_IMPLEMENTED(cpu.layout() == c10::kSparse, "npu has no tensors with layout ", cpu.layout());
    auto* impl = at::sparse::get_sparse_impl(cpu);
    const at::Tensor indices = toNpuDense(impl->indices());
    const at::Tensor values = toNpuDense(impl->values());
    return at::_sparse_coo_tensor_with_dims_and_tensors(
        impl->sparse_dim(), impl->dense_dim(), cpu.sizes(), indices, values,
        cpu.options().device(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_))),
        impl->coalesced());
  }

  int device_ = -1;
  c10::SmallVector<StorageAlias, 4> storages_;
  c10::SmallVector<TensorAlias, 4> tensors_;
};

// Every operator on npu COO tensors (and the dense operators whose result is
// COO) runs PyTorch's CPU kernel on aliases.
void executeSparseOnNpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t first = stack->size() - schema.arguments().size();
  SparseCall call;
  call.mapArguments(schema, *stack, first);
  {
    const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(call.device())));
    const ScopedOutputDevice outputs(call.device());
    // The aliases need no autograd: the npu call above this one records it.
    at::AutoDispatchBelowADInplaceOrView belowAutograd;
    op.callBoxed(stack);
  }
  call.propagateWrites();
  const size_t firstReturn = stack->size() - schema.returns().size();
  for (size_t i = firstReturn; i < stack->size(); ++i) {
    // COO and dense results only: torch.Tensor.to_sparse(layout=torch.sparse_csr) and the like.
    const c10::IValue& value = (*stack)[i];
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().layout() != c10::kStrided &&
        value.toTensor().layout() != c10::kSparse) {
      notSupportedOnNpu(operatorName(op));
    }
  }
  for (size_t i = firstReturn; i < stack->size(); ++i) (*stack)[i] = call.toNpu((*stack)[i]);
  // On the timeline as torch_npu's sparse kernels: AI Core work over the dense parts.
  c10::SmallVector<perf::TensorDesc, 4> outputs;
  for (size_t i = firstReturn; i < stack->size(); ++i) {
    const c10::IValue& value = (*stack)[i];
    if (!value.isTensor() || !value.toTensor().defined()) continue;
    const at::Tensor& t = value.toTensor();
    if (t.layout() == c10::kStrided) {
      outputs.push_back(describeTensor(t));
    } else {
      outputs.push_back(describeTensor(at::sparse::get_sparse_impl(t)->values()));
    }
  }
  OperatorRecord& record = operatorRecord(op);
  record.calls.fetch_add(1, std::memory_order_relaxed);
  const auto inputs = call.describeInputs();
  const runtime::SimTimeNs deviceNs =
      chargeOperator(call.device(), record.kind, inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                     static_cast<int>(outputs.size()), runtime::Placement::kAiCore, false);
  record.deviceNs.fetch_add(deviceNs, std::memory_order_relaxed);
}

// Dense npu tensors are not converted to layouts the NPU does not have.
void refuseLayoutConversion(const c10::OperatorHandle& op, torch::jit::Stack*) { notSupportedOnNpu(operatorName(op)); }

bool strictMode() {
  static const bool strict = [] {
    const auto value = runtime::environmentValue("TORCH_NPU_FALLBACK_CPU_DISABLE");
    return value && *value == "1";
  }();
  return strict;
}

// torch_npu runs these CSR reductions on the CPU (its explicit CPU kernels).
void allowExplicitCpuKernel(const char* name, std::atomic<bool>& warned) {
  if (strictMode()) {
    const std::string message = std::string("The operator '") + name +
                                "' would execute its main computation on CPU through an explicit CPU kernel because "
                                "torch_npu currently provides only a CPU implementation for this Sparse CSR "
                                "reduction, but CPU fallback is disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1.";
    NPUSIM_PLOG(runtime::LogLevel::kError, "APP", "[PTA]:" + message);
    TORCH_CHECK(false, message, errorSuffix(ErrorModule::kOps, ErrorKind::kFeatureNotSupported));
  }
  if (!warned.exchange(true) && !npuWarningsDisabled()) {
    TORCH_WARN("CPU fallback is allowed because TORCH_NPU_FALLBACK_CPU_DISABLE=0. Since the NPU interface does not "
               "support operator '",
               name, "', the operator will fall back to CPU.");
  }
}

at::Tensor sparseCsrSum(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  static std::atomic<bool> warned{false};
  allowExplicitCpuKernel("aten::_sparse_csr_sum.dim_dtype", warned);
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  return at::_sparse_csr_sum(self.cpu(), dim, keepdim, dtype).to(self.device());
}

at::Tensor sparseCsrProd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  static std::atomic<bool> warned{false};
  allowExplicitCpuKernel("aten::_sparse_csr_prod.dim_dtype", warned);
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  return at::_sparse_csr_prod(self.cpu(), dim, keepdim, dtype).to(self.device());
}

}  // namespace

size_t routeSparseKernelsThroughExecutor() {
  // An operator with a SparseCPU kernel and a CompositeExplicitAutograd one
  // (clone, copy_, empty_like, ...) would run the composite kernel on npu
  // COO tensors, which assumes strided memory; the executor runs the
  // SparseCPU kernel instead, as for every other sparse operator.
  static std::once_flag routed;
  static size_t count = 0;
  std::call_once(routed, [] {
    static auto* library =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::SparsePrivateUse1, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const auto& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      const auto op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::SparseCPU) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::SparsePrivateUse1)) {
        continue;
      }
      const std::string qualified = name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      library->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&executeSparseOnNpu>());
      ++count;
    }
  });
  return count;
}

void checkStridedResult(const char* operatorName, const at::Tensor& result) {
  if (result.defined() && result.layout() != c10::kStrided) notSupportedOnNpu(operatorName);
}

// The structure of sparse tensors: PyTorch's own functions, which only read
// the tensor's fields and work for any device.
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&executeSparseOnNpu>());
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("_sparse_csr_sum.dim_dtype", TORCH_FN(sparseCsrSum));
  m.impl("_sparse_csr_prod.dim_dtype", TORCH_FN(sparseCsrProd));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Dense to COO: the CPU kernel on an alias, the result a COO npu tensor.
  m.impl("_to_sparse", torch::CppFunction::makeFromBoxedFunction<&executeSparseOnNpu>());
  m.impl("_to_sparse.sparse_dim", torch::CppFunction::makeFromBoxedFunction<&executeSparseOnNpu>());
  for (const char* name : {"_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc", "to_mkldnn"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuseLayoutConversion>());
  }
}

}  // namespace npusim::backend

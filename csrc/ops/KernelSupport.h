// What every torch_npu operator kernel of this layer needs from the backend:
// the host operands its math runs on (CPU aliases of device memory, or meta
// aliases in estimate-only mode), device tensors made of its results, the
// price of the one fused kernel it launches, torch_npu's error texts and the
// chip support rules (reference §6).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "backend/timing/OperatorTiming.h"
#include "perf/FusedKernelModel.h"
#include "perf/OperatorKind.h"

namespace npusim::ops {

// The tensor the operator's math reads: a CPU alias of `npu`'s device memory
// (no copy), or a meta alias in estimate-only mode. Undefined stays undefined.
at::Tensor hostOperand(const at::Tensor& npu);
std::optional<at::Tensor> hostOperand(const std::optional<at::Tensor>& npu);

// An npu tensor on `device` holding a result of the math (a fresh host
// tensor, copied once into device memory; in estimate-only mode device memory
// is only accounted). Undefined stays undefined.
at::Tensor deviceResult(const at::Tensor& host, int device);

// Every defined tensor argument must be an npu tensor, as torch_npu checks.
void requireNpuTensors(std::initializer_list<const at::Tensor*> tensors);
void requireNpuTensor(const std::optional<at::Tensor>& tensor);

// torch_npu's error suffixes (ERR01001 / ERR01003 / ERR01007 OPS ...).
std::string invalidParameter();
std::string invalidValue();
std::string notSupported();

// The chip families of reference §6. An operator that the chosen chip
// (NPUSIM_SOC) does not support raises torch_npu's not-supported error.
enum class ChipFamily { kAscend910A, kAscend310P, kAtlasA2, kAtlasA3, kAscend950 };
ChipFamily chipFamily();
void requireChip(const char* op, std::initializer_list<ChipFamily> supported);
// bf16 exists only from 910B1 up (IsBF16Supported).
void requireDtypeOnChip(const char* op, const at::Tensor& tensor);

// Work description helpers for the cost model.
double bytesOf(const at::Tensor& tensor) noexcept;
double bytesOf(const std::optional<at::Tensor>& tensor) noexcept;
// The cost model's dtype: the backend's mapping (backend/OperatorTiming.h).
using backend::perfDtype;
// Element-wise fused kernel: reads `inputs`, writes `outputs` once each.
perf::FusedKernelWork streamingWork(std::initializer_list<const at::Tensor*> inputs,
                                    std::initializer_list<const at::Tensor*> outputs, double elements,
                                    double opsPerElement);

// Charges one launch of the fused kernel `op` (a string literal, "npu::npu_rms_norm") on the
// current stream of `device`, counts it in the reports, and returns its time.
uint64_t chargeFusedKernel(int device, const char* op, perf::OperatorKind dispatchKind,
                           const perf::FusedKernelWork& work);

}  // namespace npusim::ops

// TORCH_CHECK with torch_npu's OPS_ERROR(ErrCode::PARAM) suffix.
#define NPU_OPS_CHECK(cond, ...) TORCH_CHECK((cond), __VA_ARGS__, ::npusim::ops::invalidParameter())
#define NPU_OPS_CHECK_VALUE(cond, ...) TORCH_CHECK((cond), __VA_ARGS__, ::npusim::ops::invalidValue())

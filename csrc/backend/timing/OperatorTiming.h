// Puts the work of npu operators and copies on the simulated timeline, priced
// by the performance model (csrc/perf) of the chosen chip, and keeps the
// totals the performance report is made of.
//
// Per launch the host clock advances by the dispatch cost of the task-queue
// level; the kernel's modelled duration lands on the current stream, starting
// when both the stream is free and the host has issued it. AI CPU operators
// and CPU fallbacks make the host wait first (their inputs are read back), a
// data-dependent output size makes it wait after, and ASCEND_LAUNCH_BLOCKING=1
// makes every launch synchronous.
#pragma once

#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "perf/ChipRates.h"
#include "perf/OperatorKind.h"
#include "perf/TensorDesc.h"
#include "runtime/PlacementTable.h"
#include "runtime/Timeline.h"

namespace npusim::backend {

// A description of `tensor` for the cost model, pointing into its metadata
// (valid while the tensor lives).
// The cost model's dtype of a tensor element type (kOther for types it does not price).
perf::DType perfDtype(c10::ScalarType type) noexcept;
perf::TensorDesc describeTensor(const at::Tensor& tensor) noexcept;
perf::TensorDesc describeTensor(const c10::TensorImpl& tensor) noexcept;  // a defined tensor

// One operator call on the current stream of `device`; returns its modelled
// device time. Prices repeat from call to call (a memo per thread, see
// perf/PriceMemo.h). The HBM traffic the kernel pushes through the L2 model
// is added here, or, with `deferredL2Traffic`, stored there for the caller to
// add together with its operands' touches (one lock; see L2Residency.h).
runtime::SimTimeNs chargeOperator(int device, perf::OperatorKind kind, const perf::TensorDesc* inputs, int inputCount,
                    const perf::TensorDesc* outputs, int outputCount, runtime::Placement placement,
                    bool dataDependentSync, const int64_t* intArgs = nullptr, int intArgCount = 0,
                    double* deferredL2Traffic = nullptr);

// chargeOperator for the executor, which holds the operands as TensorImpls:
// the price memo's key is written straight from them (one pass, no
// TensorDesc), and descriptions are made only when the memo misses. `inputs`
// and `outputs` as describeTensor would describe them (nullptr: an undefined
// tensor); inputsResident[i]: whether inputs[i] is in the L2. The same price
// and the same timeline as chargeOperator with their descriptions.
runtime::SimTimeNs chargeOperatorCall(int device, perf::OperatorKind kind,
                                      c10::ArrayRef<const c10::TensorImpl*> inputs, const bool* inputsResident,
                                      c10::ArrayRef<const c10::TensorImpl*> outputs, runtime::Placement placement,
                                      bool dataDependentSync, double* deferredL2Traffic);

// The rates of the chosen chip, for callers that price their own kernels.
const perf::ChipRates& chipRates();

// One kernel whose duration the caller priced itself (torch_npu's fused
// operators, csrc/ops); dispatch as a kernel of `kind`. Returns `deviceNs`.
runtime::SimTimeNs chargeModelledKernel(int device, perf::OperatorKind kind, runtime::SimTimeNs deviceNs,
                                        perf::Unit unit, double cubeFlops, double bytes);

// Names the kernels charged on this thread while it lives, for the profiler,
// where the real stack's kernel is not named after the aten operator that
// launches it: torch_npu's native_dropout launches DSAGenBitMask and
// DropOutDoMask. Nestable; `name` must outlive the scope (a literal).
class ScopedKernelName {
 public:
  explicit ScopedKernelName(const char* name) noexcept;
  ~ScopedKernelName();
  ScopedKernelName(const ScopedKernelName&) = delete;
  ScopedKernelName& operator=(const ScopedKernelName&) = delete;

 private:
  const char* previous_;
};

enum class CopyDirection { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// A copy of `bytes` between host and device (or within the device).
void chargeCopy(int device, uint64_t bytes, CopyDirection direction, bool pinnedHost, bool nonBlocking);

// A resize or similar that moves `bytes` within the device.
void chargeDeviceCopy(int device, uint64_t bytes);

// A copy from `src` into `dst` on the device (a Cast kernel when the dtypes
// differ): reads src, writes dst. Returns its modelled device time.
runtime::SimTimeNs chargeDeviceCopy(int device, const at::Tensor& src, const at::Tensor& dst);

// An element-wise pass over `tensor` on its device (e.g. saturating it).
void chargeElementwise(int device, const at::Tensor& tensor);

// The host blocks until the current stream of `device` has finished.
void waitForCurrentStream(int device);

// Where the simulated time went since the last reset.
struct TimingTotals {
  std::array<uint64_t, 6> deviceNsByUnit{};  // by perf::Unit
  double cubeFlops = 0;                     // useful matrix FLOPs
  uint64_t hostDispatchNs = 0;
  uint64_t launches = 0;
  uint64_t hostStartNs = 0;                 // host clock at the reset
};
TimingTotals timingTotals();
void resetTimingTotals();

}  // namespace npusim::backend

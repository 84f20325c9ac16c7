#include "backend/timing/OperatorTiming.h"

#include <atomic>
#include <mutex>

#include <c10/util/SmallVector.h>

#include "backend/device/HeapThreadLocal.h"
#include "backend/device/NpuStreams.h"
#include "backend/timing/CoreLimits.h"
#include "backend/timing/DeviceActivity.h"
#include "backend/timing/GraphLaunch.h"
#include "backend/timing/Hf32Switches.h"
#include "backend/timing/L2Residency.h"
#include "backend/timing/SourceLocation.h"
#include "perf/CostModel.h"
#include "perf/PriceMemo.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

const perf::CostModel& costModel() {
  static const perf::CostModel model(runtime::Runtime::instance().chip());
  return model;
}


perf::Placement perfPlacement(runtime::Placement placement) noexcept {
  switch (placement) {
    case runtime::Placement::kAiCore: return perf::Placement::kAiCore;
    case runtime::Placement::kAiCpu: return perf::Placement::kAiCpu;
    case runtime::Placement::kCpuFallback: return perf::Placement::kCpuFallback;
  }
  return perf::Placement::kAiCore;
}

struct Totals {
  std::array<std::atomic<uint64_t>, 6> deviceNsByUnit{};
  std::atomic<uint64_t> cubeMilliFlops{0};  // FLOPs / 1000, to stay integral
  std::atomic<uint64_t> hostDispatchNs{0};
  std::atomic<uint64_t> launches{0};
  std::atomic<uint64_t> hostStartNs{0};
};
Totals totals;

void account(const perf::Cost& cost, runtime::SimTimeNs dispatch) {
  totals.deviceNsByUnit[static_cast<size_t>(cost.unit)].fetch_add(cost.deviceNs, std::memory_order_relaxed);
  if (perf::Unit::kCube == cost.unit) {
    totals.cubeMilliFlops.fetch_add(static_cast<uint64_t>(cost.flops / 1000.0), std::memory_order_relaxed);
  }
  totals.hostDispatchNs.fetch_add(dispatch, std::memory_order_relaxed);
  totals.launches.fetch_add(1, std::memory_order_relaxed);
}

// Tells a listening profiler about a task that ends at `end` on `stream`.
// The kernel name of the innermost ScopedKernelName of this thread, if any.
thread_local const char* kernelNameOverride = nullptr;

void report(DeviceActivityKind kind, int device, runtime::StreamId stream, runtime::SimTimeNs end,
            const perf::Cost& cost, runtime::SimTimeNs dispatch, runtime::Placement placement) {
  const DeviceActivitySink sink = deviceActivitySink();
  if (sink == nullptr) return;
  DeviceActivity activity;
  activity.kind = kind;
  activity.device = device;
  activity.stream = stream;
  activity.hostNs = runtime::Runtime::instance().hostClock().now();
  activity.startNs = end - cost.deviceNs;
  activity.durationNs = cost.deviceNs;
  activity.dispatchNs = dispatch;
  activity.placement = static_cast<uint8_t>(placement);
  activity.unit = static_cast<uint8_t>(cost.unit);
  activity.bytes = static_cast<uint64_t>(cost.bytes);
  // The user's line behind an AI CPU operator or a fallback, for the report.
  if (placement != runtime::Placement::kAiCore) activity.source = currentSourceLocation();
  if (kind == DeviceActivityKind::kKernel && kernelNameOverride != nullptr) activity.what = kernelNameOverride;
  sink(activity);
}

}  // namespace

ScopedKernelName::ScopedKernelName(const char* name) noexcept : previous_(kernelNameOverride) {
  kernelNameOverride = name;
}
ScopedKernelName::~ScopedKernelName() { kernelNameOverride = previous_; }

perf::DType perfDtype(c10::ScalarType type) noexcept {
  switch (type) {
    case c10::ScalarType::Float: return perf::DType::kFloat32;
    case c10::ScalarType::Half: return perf::DType::kFloat16;
    case c10::ScalarType::BFloat16: return perf::DType::kBFloat16;
    case c10::ScalarType::Double: return perf::DType::kFloat64;
    case c10::ScalarType::Char: return perf::DType::kInt8;
    case c10::ScalarType::Byte: return perf::DType::kUInt8;
    case c10::ScalarType::Short: return perf::DType::kInt16;
    case c10::ScalarType::Int: return perf::DType::kInt32;
    case c10::ScalarType::Long: return perf::DType::kInt64;
    case c10::ScalarType::Bool: return perf::DType::kBool;
    case c10::ScalarType::ComplexFloat: return perf::DType::kComplex64;
    // Quantized tensors move their underlying integers.
    case c10::ScalarType::QInt8: return perf::DType::kInt8;
    case c10::ScalarType::QUInt8: return perf::DType::kUInt8;
    case c10::ScalarType::QInt32: return perf::DType::kInt32;
    default: return perf::DType::kOther;
  }
}

perf::TensorDesc describeTensor(const at::Tensor& tensor) noexcept {
  if (!tensor.defined()) return perf::TensorDesc::undefined();
  return describeTensor(*tensor.unsafeGetTensorImpl());
}

perf::TensorDesc describeTensor(const c10::TensorImpl& tensor) noexcept {
  perf::TensorDesc desc;
  desc.sizes = tensor.sizes().data();
  desc.strides = tensor.strides().data();
  desc.rank = static_cast<int>(tensor.dim());
  desc.dtype = perfDtype(c10::typeMetaToScalarType(tensor.dtype()));
  return desc;
}

namespace {

// This thread's price memo (45 KB: on the heap, see backend/device/HeapThreadLocal.h).
perf::PriceMemo& threadPriceMemo() { return HeapThreadLocal<perf::PriceMemo>::get(); }

// A priced call onto the timeline (see chargeOperator).
runtime::SimTimeNs chargePriced(int device, perf::OperatorKind kind, const perf::Cost& memoCost,
                                runtime::Placement placement, bool dataDependentSync, double* deferredL2Traffic) {
  auto& rt = runtime::Runtime::instance();
  const perf::Cost cost = applyCoreLimits(device, memoCost);
  // A replayed graph launches its kernels from the device: no host dispatch each.
  const runtime::SimTimeNs dispatch = replayingGraph() ? 0 : costModel().hostDispatchNs(rt.taskQueueLevel(), kind);
  auto& timeline = rt.timeline(device);
  const runtime::StreamId stream = currentStream(device);
  rt.hostClock().advance(dispatch);
  if (cost.synchronizesHost) timeline.synchronizeStream(stream);
  const runtime::SimTimeNs end = timeline.submit(stream, cost.deviceNs);
  report(DeviceActivityKind::kKernel, device, stream, end, cost, dispatch, placement);
  // A CPU fallback computes on the host: the host is busy for that long too.
  if (cost.hostNs > 0) rt.hostClock().advance(cost.hostNs);
  if (dataDependentSync || rt.launchBlocking()) timeline.synchronizeStream(stream);
  const double l2Traffic = cost.unit == perf::Unit::kCube || cost.unit == perf::Unit::kVector ? cost.bytes : 0.0;
  if (deferredL2Traffic != nullptr) {
    *deferredL2Traffic = l2Traffic;
  } else if (l2Traffic > 0) {
    addL2Traffic(device, l2Traffic);
  }
  account(cost, dispatch);
  return cost.deviceNs;
}

// An operand's words in the price memo's key (describeTensor's description of it).
int operandWords(const c10::TensorImpl* tensor) noexcept {
  return tensor == nullptr ? 1 : perf::price_key::operandWords(static_cast<int>(tensor->dim()), true);
}

[[gnu::always_inline]] inline void putOperand(int64_t*& out, uint64_t& hash, const c10::TensorImpl* tensor,
                                              bool l2Resident) noexcept {
  if (tensor == nullptr) {
    const perf::TensorDesc none = perf::TensorDesc::undefined();
    perf::price_key::putOperand(out, hash, none.rank, none.dtype, none.l2Resident, none.sizes, none.strides);
    return;
  }
  perf::price_key::putOperand(out, hash, static_cast<int>(tensor->dim()),
                              perfDtype(c10::typeMetaToScalarType(tensor->dtype())), l2Resident,
                              tensor->sizes().data(), tensor->strides().data());
}

perf::TensorDesc describeOperand(const c10::TensorImpl* tensor, bool l2Resident) noexcept {
  if (tensor == nullptr) return perf::TensorDesc::undefined();
  perf::TensorDesc desc = describeTensor(*tensor);
  desc.l2Resident = l2Resident;
  return desc;
}

// The price of a call that the memo does not know: its operands described.
perf::Cost priceOperands(const perf::CostModel& model, perf::OperatorKind kind,
                         c10::ArrayRef<const c10::TensorImpl*> inputs, const bool* inputsResident,
                         c10::ArrayRef<const c10::TensorImpl*> outputs, perf::Placement placement,
                         const perf::CostOptions& options) {
  c10::SmallVector<perf::TensorDesc, 8> in;
  c10::SmallVector<perf::TensorDesc, 8> out;
  for (size_t i = 0; i < inputs.size(); ++i) in.push_back(describeOperand(inputs[i], inputsResident[i]));
  for (const c10::TensorImpl* t : outputs) out.push_back(describeOperand(t, false));
  return model.price(kind, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), placement,
                     options, nullptr, 0);
}

}  // namespace

runtime::SimTimeNs chargeOperator(int device, perf::OperatorKind kind, const perf::TensorDesc* inputs, int inputCount,
                    const perf::TensorDesc* outputs, int outputCount, runtime::Placement placement,
                    bool dataDependentSync, const int64_t* intArgs, int intArgCount, double* deferredL2Traffic) {
  const perf::Cost cost = threadPriceMemo().price(costModel(), kind, inputs, inputCount, outputs, outputCount,
                                                  perfPlacement(placement), hf32CostOptions(), intArgs, intArgCount);
  return chargePriced(device, kind, cost, placement, dataDependentSync, deferredL2Traffic);
}

runtime::SimTimeNs chargeOperatorCall(int device, perf::OperatorKind kind,
                                      c10::ArrayRef<const c10::TensorImpl*> inputs, const bool* inputsResident,
                                      c10::ArrayRef<const c10::TensorImpl*> outputs, runtime::Placement placement,
                                      bool dataDependentSync, double* deferredL2Traffic) {
  const perf::CostModel& model = costModel();
  perf::PriceMemo& memo = threadPriceMemo();
  const perf::Placement place = perfPlacement(placement);
  const perf::CostOptions options = hf32CostOptions();
  const int inputCount = static_cast<int>(inputs.size());
  const int outputCount = static_cast<int>(outputs.size());
  int length = 1;
  for (const c10::TensorImpl* t : inputs) length += operandWords(t);
  for (const c10::TensorImpl* t : outputs) length += operandWords(t);
  perf::Cost cost;
  if (length > perf::PriceMemo::kKeyWords) {
    memo.countUnkeyed();
  } else {
    // The key straight from the operands (the same words price() writes for their descriptions).
    perf::PriceMemo::Key key;
    int64_t* out = key.words;
    uint64_t hash = 0;
    perf::price_key::putHeader(out, hash, kind, place, options, inputCount, outputCount, 0);
    for (int i = 0; i < inputCount; ++i) putOperand(out, hash, inputs[i], inputsResident[i]);
    for (const c10::TensorImpl* t : outputs) putOperand(out, hash, t, false);
    key.length = length;
    key.hash = hash;
    if (const perf::Cost* remembered = memo.find(model, key)) {
      return chargePriced(device, kind, *remembered, placement, dataDependentSync, deferredL2Traffic);
    }
    cost = priceOperands(model, kind, inputs, inputsResident, outputs, place, options);
    memo.remember(model, key, cost);
    return chargePriced(device, kind, cost, placement, dataDependentSync, deferredL2Traffic);
  }
  cost = priceOperands(model, kind, inputs, inputsResident, outputs, place, options);
  return chargePriced(device, kind, cost, placement, dataDependentSync, deferredL2Traffic);
}

const perf::ChipRates& chipRates() { return costModel().rates(); }

runtime::SimTimeNs chargeModelledKernel(int device, perf::OperatorKind kind, runtime::SimTimeNs deviceNs,
                                        perf::Unit unit, double cubeFlops, double bytes) {
  auto& rt = runtime::Runtime::instance();
  perf::Cost cost;
  cost.deviceNs = deviceNs;
  cost.unit = unit;
  cost.flops = cubeFlops;
  cost.bytes = bytes;
  const runtime::SimTimeNs dispatch = replayingGraph() ? 0 : costModel().hostDispatchNs(rt.taskQueueLevel(), kind);
  auto& timeline = rt.timeline(device);
  const runtime::StreamId stream = currentStream(device);
  rt.hostClock().advance(dispatch);
  const runtime::SimTimeNs end = timeline.submit(stream, cost.deviceNs);
  report(DeviceActivityKind::kKernel, device, stream, end, cost, dispatch, runtime::Placement::kAiCore);
  if (rt.launchBlocking()) timeline.synchronizeStream(stream);
  account(cost, dispatch);
  return cost.deviceNs;
}

void chargeCopy(int device, uint64_t bytes, CopyDirection direction, bool pinnedHost, bool nonBlocking) {
  auto& rt = runtime::Runtime::instance();
  const perf::CostModel& model = costModel();
  const perf::Transfer kind = direction == CopyDirection::kHostToDevice   ? perf::Transfer::kHostToDevice
                              : direction == CopyDirection::kDeviceToHost ? perf::Transfer::kDeviceToHost
                                                                          : perf::Transfer::kDeviceToDevice;
  const perf::Cost cost = model.transfer(kind, bytes, pinnedHost);
  const runtime::SimTimeNs dispatch =
      replayingGraph() ? 0 : model.hostDispatchNs(rt.taskQueueLevel(), perf::OperatorKind::kDataMovement);
  auto& timeline = rt.timeline(device);
  const runtime::StreamId stream = currentStream(device);
  rt.hostClock().advance(dispatch);
  const runtime::SimTimeNs end = timeline.submit(stream, cost.deviceNs);
  report(direction == CopyDirection::kHostToDevice   ? DeviceActivityKind::kCopyHostToDevice
         : direction == CopyDirection::kDeviceToHost ? DeviceActivityKind::kCopyDeviceToHost
                                                     : DeviceActivityKind::kCopyDeviceToDevice,
         device, stream, end, cost, dispatch, runtime::Placement::kAiCore);
  // A copy from pageable memory, or to the host, returns only when done unless asked not to.
  const bool hostWaits = direction == CopyDirection::kDeviceToHost
                             ? !nonBlocking
                             : direction == CopyDirection::kHostToDevice && !(pinnedHost && nonBlocking);
  if (hostWaits || rt.launchBlocking()) timeline.synchronizeStream(stream);
  if (direction != CopyDirection::kDeviceToHost) addL2Traffic(device, cost.bytes);
  account(cost, dispatch);
}

void chargeDeviceCopy(int device, uint64_t bytes) {
  chargeCopy(device, bytes, CopyDirection::kDeviceToDevice, false, true);
}

runtime::SimTimeNs chargeDeviceCopy(int device, const at::Tensor& src, const at::Tensor& dst) {
  const perf::TensorDesc in = describeTensor(src);
  const perf::TensorDesc out = describeTensor(dst);
  return chargeOperator(device, perf::OperatorKind::kDataMovement, &in, 1, &out, 1, runtime::Placement::kAiCore, false);
}

void chargeElementwise(int device, const at::Tensor& tensor) {
  const perf::TensorDesc desc = describeTensor(tensor);
  chargeOperator(device, perf::OperatorKind::kElementwise, &desc, 1, &desc, 1, runtime::Placement::kAiCore, false);
}

void waitForCurrentStream(int device) {
  runtime::Runtime::instance().timeline(device).synchronizeStream(currentStream(device));
}

TimingTotals timingTotals() {
  TimingTotals out;
  for (size_t i = 0; i < out.deviceNsByUnit.size(); ++i) {
    out.deviceNsByUnit[i] = totals.deviceNsByUnit[i].load(std::memory_order_relaxed);
  }
  out.cubeFlops = static_cast<double>(totals.cubeMilliFlops.load(std::memory_order_relaxed)) * 1000.0;
  out.hostDispatchNs = totals.hostDispatchNs.load(std::memory_order_relaxed);
  out.launches = totals.launches.load(std::memory_order_relaxed);
  out.hostStartNs = totals.hostStartNs.load(std::memory_order_relaxed);
  return out;
}

void resetTimingTotals() {
  for (auto& value : totals.deviceNsByUnit) value.store(0, std::memory_order_relaxed);
  totals.cubeMilliFlops.store(0, std::memory_order_relaxed);
  totals.hostDispatchNs.store(0, std::memory_order_relaxed);
  totals.launches.store(0, std::memory_order_relaxed);
  totals.hostStartNs.store(runtime::Runtime::instance().hostClock().now(), std::memory_order_relaxed);
}

}  // namespace npusim::backend

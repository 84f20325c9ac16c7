// Copies to, from and between npu devices. Device memory is host memory, so a
// copy is PyTorch's CPU copy (dtype conversion, broadcasting and strides
// included) between CPU aliases; what differs per direction is its place on
// the simulated timeline.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "backend/device/NpuErrors.h"
#include "backend/device/PinnedMemory.h"
#include "backend/device/RecoveryChecks.h"
#include "backend/device/TensorAliasing.h"
#include "backend/numerics/InfNanMode.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorPlacement.h"
#include "backend/timing/OperatorRecords.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/DeviceRecovery.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

bool isNpu(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

at::Tensor copyFrom(const at::Tensor& self, const at::Tensor& dst, bool nonBlocking) {
  const bool fromNpu = isNpu(self);
  const bool toNpu = isNpu(dst);
  TORCH_CHECK(fromNpu || self.device().is_cpu(), "Copying from ", self.device(), " to ", dst.device(),
              " is not supported by the npu backend");
  TORCH_CHECK(toNpu || dst.device().is_cpu(), "Copying from ", self.device(), " to ", dst.device(),
              " is not supported by the npu backend");
  if (fromNpu || toNpu) NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().checkNotForkedChild());
  if (self.numel() == 0) return dst;
  if ((fromNpu || toNpu) && runtime::DeviceRecovery::active()) {
    // torch_npu's copy_: the task fails on a stopped device; the source must be safe and the
    // destination holds fresh data afterwards.
    if (fromNpu) checkDeviceNotStopped(self.device().index());
    if (toNpu) checkDeviceNotStopped(dst.device().index());
    checkDataSafe(self);
    markDataSafe(dst);
  }
  // The executor's reusable aliases (TensorAliasing.h): a training loop copies the same
  // tensors again and again (autocast's casts, optimizer states). They also give both sides
  // one CPU storage when their npu tensors share one, so that the CPU copy's overlap checks,
  // which compare storages, see that they share memory (x.copy_(x.t()), x[1:] = x[:-1]) and
  // raise PyTorch's error as on the CPU.
  ReusableAliases* aliases = fromNpu || toNpu ? &ReusableAliases::ofThisThread() : nullptr;
  at::Tensor source = fromNpu ? aliases->tensorAlias(self, aliases->storageAlias(self.storage())) : self;
  at::Tensor target;
  if (fromNpu && toNpu && self.storage().is_alias_of(dst.storage())) {
    target = aliases->tensorAlias(dst, source.storage());  // two npu storages over the same bytes
  } else {
    target = toNpu ? aliases->tensorAlias(dst, aliases->storageAlias(dst.storage())) : dst;
  }
  const uint64_t bytes = static_cast<uint64_t>(dst.numel()) * dst.element_size();
  if (fromNpu && !toNpu) {
    // Device to host: the host waits for the work that produces the data,
    // unless the copy is asynchronous.
    chargeCopy(self.device().index(), bytes, CopyDirection::kDeviceToHost, isPinnedHostPointer(dst.data_ptr()),
               nonBlocking);
    if (!nonBlocking) recordSyncPoint("copy to host (Tensor.cpu(), .numpy(), .tolist(), print)");
  } else if (!fromNpu && toNpu) {
    chargeCopy(dst.device().index(), bytes, CopyDirection::kHostToDevice, isPinnedHostPointer(self.data_ptr()),
               nonBlocking);
  } else {
    // On the device: a Cast kernel when the dtype changes (autocast's casts, .to(dtype)), else a
    // copy; both appear in the operator table and the placement counts.
    static OperatorRecord& cast = nativeOperatorRecord("aten::_to_copy");
    static OperatorRecord& copy = nativeOperatorRecord("aten::copy_");
    const runtime::SimTimeNs ns = chargeDeviceCopy(dst.device().index(), self, dst);
    countNativeCall(self.scalar_type() != dst.scalar_type() ? cast : copy, ns);
  }
  if (estimateOnly()) {
    // No data on the device: a copy to the host gives zeros, others move nothing.
    if (!toNpu) {
      warnEstimateOnce("copy to host", "copies to the host give zeros in estimate-only mode (the device holds no data)");
      target.zero_();
    }
    return dst;
  }
  target.copy_(source, nonBlocking);
  // A dtype conversion on the device is a Cast kernel, which saturates in
  // saturation mode; a plain copy keeps Inf and NaN.
  if (toNpu && self.scalar_type() != dst.scalar_type()) applySaturationIfEnabled(target, dst.device().index());
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copyFrom(self, dst, false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copyFrom));
  m.impl("_copy_from_and_resize", TORCH_FN(copyFromAndResize));
}

// A conjugate or negative view is copied by PyTorch's CPU copy_ on the aliases,
// which carry the view's bits and resolve them. Without these fallthroughs the
// conjugate fallback would materialise the view with clone -> copy_ ->
// _copy_from, recursing until the stack overflows.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace npusim::backend

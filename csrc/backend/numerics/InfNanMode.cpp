#include "backend/numerics/InfNanMode.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <vector>

#include "backend/device/NpuErrors.h"
#include "backend/device/NpuTensors.h"
#include "backend/device/TensorAliasing.h"
#include "backend/timing/EstimateMode.h"
#include "backend/timing/OperatorTiming.h"
#include "runtime/EnvironmentVariables.h"
#include "runtime/Runtime.h"

namespace npusim::backend {
namespace {

// torch_npu's SocVersion values (core/npu/NpuVariables.h) that bound the chip generations.
constexpr int kAscend910B1 = 220;
constexpr int kAscend310B1 = 240;
constexpr int kAscend910_9391 = 250;
constexpr int kAscend950 = 260;

constexpr size_t kMaxDevices = 64;

std::array<std::atomic<bool>, kMaxDevices> overflowFlags{};
std::atomic<int64_t> saturationChecks{0};

// torch_npu reads its switches with strtol and treats any non-zero number as
// 1 (OptionsManager::GetBoolTypeOption); it reads them once per process.
bool switchValue(const char* name, bool fallback) {
  const auto text = runtime::environmentValue(name);
  if (!text) return fallback;
  return std::strtol(text->c_str(), nullptr, 10) != 0;
}

FloatOverflowMode decideMode() {
  int soc = 0;
  NPUSIM_TRANSLATE_ERRORS(soc = runtime::Runtime::instance().chip().socVersionId);
  if (soc >= kAscend950) return FloatOverflowMode::kInfNan;  // the variables do not take effect
  const bool infNanByDefault = (soc >= kAscend910B1 && soc < kAscend310B1) || soc >= kAscend910_9391;
  const bool enable = switchValue("INF_NAN_MODE_ENABLE", true);
  const bool forceDisable = switchValue("INF_NAN_MODE_FORCE_DISABLE", false);
  if (!infNanByDefault) return FloatOverflowMode::kSaturation;  // older chips saturate, whatever is set
  if (!enable) {
    TORCH_CHECK(forceDisable,
                "INF_NAN_MODE_ENABLE shouldn't be set to 0 on the current device. If you want to disable "
                "inf-nan mode, please export INF_NAN_MODE_FORCE_DISABLE=1");
    return FloatOverflowMode::kSaturation;
  }
  return forceDisable ? FloatOverflowMode::kSaturation : FloatOverflowMode::kInfNan;
}

bool saturates(at::ScalarType type) {
  return type == at::kHalf || type == at::kBFloat16 || type == at::kFloat || type == at::kDouble;
}

double largestFinite(at::ScalarType type) {
  switch (type) {
    case at::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::max());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
    case at::kFloat:
      return static_cast<double>(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

void raiseFlag(int device) {
  if (device >= 0 && static_cast<size_t>(device) < kMaxDevices) overflowFlags[device].store(true);
}

// Host-side work on CPU aliases of device memory, out of sight of autograd and
// of Python dispatch modes (it is part of one simulated kernel).
struct HostSideWork {
  at::AutoDispatchBelowADInplaceOrView belowAutograd;
  c10::impl::ExcludeDispatchKeyGuard noPython{
      c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot})};
};

// TORCH_NPU_WARNING_DISABLE=1 (or the deprecated TORCH_NPU_DISABLED_WARNING) silences torch_npu's
// warnings.
bool warningsDisabled() {
  static const bool disabled =
      switchValue("TORCH_NPU_WARNING_DISABLE", false) || switchValue("TORCH_NPU_DISABLED_WARNING", false);
  return disabled;
}

// torch_npu's (op-plugin) _amp_foreach_non_finite_check_and_unscale_: in
// INF_NAN mode one kernel that sets found_inf when a gradient holds Inf or NaN
// and unscales all of them (PyTorch's semantics, run here by PyTorch's CPU
// kernel on the device memory); in saturation mode gradients hold no Inf any
// more, so the float status register decides: raised, found_inf becomes 1,
// the register is cleared and nothing is unscaled; else every gradient is
// multiplied by inv_scale.
void nonFiniteCheckAndUnscale(at::TensorList scaledGrads, at::Tensor& foundInf, const at::Tensor& invScale) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true) && !warningsDisabled()) TORCH_WARN("Non finite check and unscale on NPU device!");
  TORCH_CHECK(isNpuTensor(invScale), "inv_scale must be NPU-Tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
  TORCH_CHECK(invScale.numel() == 1, "inv_scale must be a 1-element tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
  TORCH_CHECK(foundInf.numel() == 1, "found_inf must be a 1-element tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
  TORCH_CHECK(invScale.scalar_type() == at::kFloat, "inv_scale must be a float tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidType));
  TORCH_CHECK(foundInf.scalar_type() == at::kFloat, "found_inf must be a float tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidType));
  TORCH_CHECK(isNpuTensor(foundInf), "found_inf must be NPU-Tensor",
              errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
  if (scaledGrads.empty()) return;

  const int device = npuDeviceIndex(invScale);
  const auto expectedDevice = scaledGrads[0].device();
  const auto expectedType = scaledGrads[0].scalar_type();
  for (const auto& grad : scaledGrads) {
    TORCH_CHECK(isNpuTensor(grad), "one of scaled_grads was not a NPU tensor.",
                errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
    TORCH_CHECK(grad.device() == expectedDevice, "scaled_grads must be on the same device.",
                errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
    TORCH_CHECK(grad.scalar_type() == expectedType, "scaled_grads must have the same dtype.",
                errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidType));
    TORCH_CHECK(grad.layout() == at::kStrided, "one of scaled_grads was not a strided tensor.",
                errorSuffix(ErrorModule::kOps, ErrorKind::kInvalidParameter));
  }

  // Estimate-only tensors have no data: the kernel is priced, and neither the
  // gradients (whose pages the host would otherwise commit, a whole model's
  // worth) nor found_inf are touched.
  if (estimateOnly()) {
    if (saturationModeEnabled()) chargeElementwise(device, foundInf);
    for (const auto& grad : scaledGrads) chargeElementwise(device, grad);
    return;
  }
  const HostSideWork hostSide;
  at::Tensor foundInfOnHost = makeCpuAlias(foundInf);
  const at::Tensor invScaleOnHost = makeCpuAlias(invScale);
  if (!saturationModeEnabled()) {
    std::vector<at::Tensor> gradsOnHost;
    gradsOnHost.reserve(scaledGrads.size());
    for (const auto& grad : scaledGrads) gradsOnHost.push_back(makeCpuAlias(grad));
    at::_amp_foreach_non_finite_check_and_unscale_(gradsOnHost, foundInfOnHost, invScaleOnHost);
    for (const auto& grad : scaledGrads) chargeElementwise(device, grad);
    return;
  }
  // Reading the status register synchronizes the stream.
  chargeElementwise(device, foundInf);
  waitForCurrentStream(device);
  if (overflowFlag(device)) {
    clearOverflowFlag(device);
    foundInfOnHost.fill_(1.0);
    chargeElementwise(device, foundInf);
    return;
  }
  for (const auto& grad : scaledGrads) {
    makeCpuAlias(grad).mul_(invScaleOnHost);
    chargeElementwise(device, grad);
  }
}

// Python's view of the mode (torch.npu.utils.is_support_inf_nan and the
// overflow-flag functions), through torch.ops.npusim.
int64_t floatOverflowModeForPython() { return static_cast<int64_t>(floatOverflowMode()); }
bool overflowFlagForPython(int64_t device) { return overflowFlag(static_cast<int>(device)); }
void clearOverflowFlagForPython(int64_t device) { clearOverflowFlag(static_cast<int>(device)); }
int64_t saturationChecksForPython() { return saturationChecks.load(); }

}  // namespace

FloatOverflowMode floatOverflowMode() {
  static const FloatOverflowMode mode = decideMode();  // a throw leaves it undecided: the next call throws again
  return mode;
}

bool saturationModeEnabled() { return floatOverflowMode() == FloatOverflowMode::kSaturation; }

void applySaturationIfEnabled(const at::Tensor& result, int device) {
  if (!result.defined() || !saturationModeEnabled()) return;
  if (!saturates(result.scalar_type()) || result.numel() == 0) return;
  if (estimateOnly()) return;  // no data to saturate
  if (at::has_internal_overlap(result) == at::MemOverlap::Yes) return;  // an expanded view, not a kernel result
  saturationChecks.fetch_add(1, std::memory_order_relaxed);
  const HostSideWork hostSide;
  at::Tensor values = result;
  if (isNpuTensor(result)) {
    device = npuDeviceIndex(result);
    values = makeCpuAlias(result);
  }
  if (at::isfinite(values).all().item<bool>()) return;
  const double largest = largestFinite(values.scalar_type());
  values.nan_to_num_(0.0, largest, -largest);
  raiseFlag(device);
}

bool overflowFlag(int device) {
  return device >= 0 && static_cast<size_t>(device) < kMaxDevices && overflowFlags[device].load();
}

void clearOverflowFlag(int device) {
  if (device >= 0 && static_cast<size_t>(device) < kMaxDevices) overflowFlags[device].store(false);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(nonFiniteCheckAndUnscale));
}

TORCH_LIBRARY_FRAGMENT(npusim, m) {
  m.def("_float_overflow_mode() -> int", &floatOverflowModeForPython);
  m.def("_overflow_flag(int device) -> bool", &overflowFlagForPython);
  m.def("_clear_overflow_flag(int device) -> ()", &clearOverflowFlagForPython);
  m.def("_saturation_checks() -> int", &saturationChecksForPython);
}

}  // namespace npusim::backend

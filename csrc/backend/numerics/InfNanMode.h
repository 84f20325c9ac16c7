// How the simulated chip treats Inf and NaN in floating-point results
// (contract §13, torch_npu's IsSupportInfNan, CANN's aclrtFloatOverflowMode).
//
// INF_NAN mode is IEEE 754: results are what the CPU kernels produce. In
// saturation mode every kernel's floating-point result is clamped as the chip
// does it: +Inf -> the dtype's max, -Inf -> its lowest, NaN -> 0, and the
// device's overflow flag (the float status register read by
// torch.npu.get_npu_overflow_flag) goes up. Copies that only move bytes keep
// Inf and NaN, as a memcpy on the chip does.
//
// Which mode, decided once per process from the chip (NPUSIM_SOC) and the
// environment, as torch_npu decides it at device initialization:
//   - Atlas training series (A1, Ascend910A): saturation only.
//   - A2/A3 (Ascend910B*, Ascend910_93*): INF_NAN by default;
//     INF_NAN_MODE_FORCE_DISABLE=1 selects saturation; INF_NAN_MODE_ENABLE=0
//     without it is refused with torch_npu's error.
//   - Ascend950: INF_NAN only.
#pragma once

#include <ATen/core/Tensor.h>

namespace npusim::backend {

enum class FloatOverflowMode { kSaturation = 0, kInfNan = 1 };  // aclrtFloatOverflowMode's values

// The mode of this process. Throws c10::Error with torch_npu's text when
// INF_NAN_MODE_ENABLE=0 is set on an A2/A3 chip without
// INF_NAN_MODE_FORCE_DISABLE=1 (again on every call: the device is unusable
// until the process restarts with a valid setting, as on torch_npu).
FloatOverflowMode floatOverflowMode();

// True in saturation mode. Cheap after the first call; throws like
// floatOverflowMode().
bool saturationModeEnabled();

// In saturation mode, rewrites in place the Inf and NaN values of `result` (a
// floating-point kernel result: an npu tensor, or a CPU alias of device
// memory on `device`) as the chip would have produced them, and raises the
// overflow flag of the device when it changed anything. Does nothing in
// INF_NAN mode, for other dtypes (integers, bool, complex, float8) and for
// undefined or empty tensors. `device` is needed only for a CPU alias; an npu
// tensor names its own.
void applySaturationIfEnabled(const at::Tensor& result, int device = -1);

// The float status register of `device`: raised by saturation, read and
// cleared by torch.npu.get_npu_overflow_flag / clear_npu_overflow_flag and by
// the non-finite check of the gradient scaler in saturation mode.
bool overflowFlag(int device);
void clearOverflowFlag(int device);

}  // namespace npusim::backend

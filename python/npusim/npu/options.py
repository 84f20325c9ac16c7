"""torch_npu's runtime options and switches: ``set_option``, ``set_compile_mode``,
``config.allow_internal_format``, ``matmul`` / ``conv`` ``allow_hf32`` (``aclnn``: :mod:`.aclnn`),
``CubeMathType``, the SDPA back-end switches, deterministic-with-backward, device core limits,
the op timeout and the sync debug mode.

The values live in one option table, as torch_npu keeps them in its C++ ``OptionsManager``
(``torch_npu._C._npu_getOption`` reads it). What npusim does with them:

- ``ALLOW_MATMUL_HF32`` / ``ALLOW_CONV_HF32``: the backend rounds the fp32 operands of matrix
  products / convolutions to HF32 (fp32 range, 11-bit mantissa) as the Cube does, and prices
  those kernels at the HF32 rate;
- ``jitCompile``: recorded (``is_jit_compile_false``); npusim always runs the aclnn path;
- ``ALLOW_INTERNAL_FORMAT``: recorded; formats are recorded per storage (:mod:`.formats`);
- sync debug mode: warns or raises at every synchronization point (the C++ backend);
- device core limits: validated against the chip; the cost model stretches each AI Core kernel's
  time by (all cores / allowed cores) of the unit it runs on.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import os
import warnings
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error

__all__ = [
    "set_option",
    "set_compile_mode",
    "is_jit_compile_false",
    "set_mm_bmm_format_nd",
    "get_mm_bmm_format_nd",
    "set_aoe",
    "set_dump",
    "init_dump",
    "finalize_dump",
    "config",
    "matmul",
    "conv",
    "CubeMathType",
    "enable_flash_sdp",
    "enable_math_sdp",
    "enable_mem_efficient_sdp",
    "flash_sdp_enabled",
    "math_sdp_enabled",
    "mem_efficient_sdp_enabled",
    "sdp_kernel",
    "preferred_linalg_library",
    "enable_deterministic_with_backward",
    "disable_deterministic_with_backward",
    "set_device_limit",
    "get_device_limit",
    "set_op_timeout_ms",
    "set_sync_debug_mode",
    "get_sync_debug_mode",
    "use_compatible_impl",
    "are_compatible_impl_enabled",
]

# Values that torch_npu validates before handing an option to ACL (npu_config.py).
_VALIDATED = {
    "ACL_PRECISION_MODE": ["allow_fp32_to_fp16", "must_keep_origin_dtype"],
    "ACL_OP_SELECT_IMPL_MODE": ["high_performance", "high_precision"],
    "ACL_AICORE_NUM": (lambda value: value.isdigit() and 1 <= int(value) <= 32),
    "ACL_OPTYPELIST_FOR_IMPLMODE": None,
    "ACL_OP_DEBUG_LEVEL": ["0", "1", "2", "3", "4"],
    "ACL_DEBUG_DIR": None,
    "ACL_OP_COMPILER_CACHE_MODE": ["disable", "enable", "force"],
    "ACL_OP_COMPILER_CACHE_DIR": None,
    "ACL_OP_DEBUG_OPTION": None,
}
_DEPRECATED = {"ACL_OP_SELECT_IMPL_MODE", "ACL_OPTYPELIST_FOR_IMPLMODE"}

# Every option name the option manager knows, with its value on an A2 (910B) device before the
# program sets it. None: unset.
_OPTIONS: dict[str, str | None] = {
    "jitCompile": "disable",  # A2/A3 default: aclnn, no online compilation (contract §3)
    "ALLOW_INTERNAL_FORMAT": "disable",  # A2 default since torch_npu 2.8.0
    "ALLOW_MATMUL_HF32": "disable",
    "ALLOW_CONV_HF32": "enable",
    "MM_BMM_ND_ENABLE": None,
    "mdldumpswitch": None,
    "mdldumpconfigpath": None,
    "autotune": None,
    "autotunegraphdumppath": None,
    "deliverswitch": None,
    "fuzzycompileswitch": None,
    "NPU_FUZZY_COMPILE_BLACKLIST": None,
    "TORCH_NPU_USE_COMPATIBLE_IMPL": None,  # use_compatible_impl: aten-compatible kernels
    "FORCE_ACLNN_OP_LIST": None,  # operators forced onto aclnn (npusim runs every one there)
    **{name: None for name in _VALIDATED},
}


def _set_options(option: dict[str, str]) -> None:
    """torch_npu._C._npu_setOption: every name must be known."""
    for name in option:
        if name not in _OPTIONS:
            raise RuntimeError(f"invalid npu option name:{name}" + pta_error(ErrCode.PARAM))
    _OPTIONS.update(option)
    if "ALLOW_MATMUL_HF32" in option or "ALLOW_CONV_HF32" in option:
        # The backend rounds the Cube's fp32 operands and prices the kernels accordingly.
        _C._set_hf32(_OPTIONS["ALLOW_MATMUL_HF32"] == "enable", _OPTIONS["ALLOW_CONV_HF32"] != "disable")


def _get_option(name: str) -> bytes | None:
    """torch_npu._C._npu_getOption: the value as bytes, None when unset."""
    value = _OPTIONS.get(name)
    return None if value is None else value.encode()


def set_option(option: dict) -> None:
    r"""Set NPU options (ACL compile options and torch_npu switches) from a dict."""
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict." + pta_error(ErrCode.PARAM))
    if option.get("MM_BMM_ND_ENABLE") == "enable":
        set_mm_bmm_format_nd(True)
    elif option.get("MM_BMM_ND_ENABLE") == "disable":
        set_mm_bmm_format_nd(False)
    checked: dict[str, str] = {}
    for name, value in option.items():
        text = str(value)
        rule = _VALIDATED.get(name)
        valid = rule is None or (rule(text) if callable(rule) else text in rule)
        if not valid:
            allowed = inspect.getsource(rule) if callable(rule) else rule
            raise ValueError(f"value of {name} should be in {allowed} but got {value}" + pta_error(ErrCode.PARAM))
        if name in _DEPRECATED:
            warnings.warn(
                f"{name} will be deprecated in future version. The accuracy or performance may not be the optimal "
                "when configuring this option. We do not recommend setting it."
            )
        checked[name] = text
    _set_options(checked)


def set_compile_mode(jit_compile: bool = False) -> None:
    r"""Choose online compilation (aclop, ``True``) or the precompiled aclnn kernels (``False``)."""
    from npusim.npu import _lazy, devices

    if _lazy.is_initialized():
        devices.synchronize()
    _set_options({"jitCompile": "enable" if jit_compile else "disable"})


def is_jit_compile_false() -> bool:
    r"""Whether online compilation is off (the aclnn path, the default on A2/A3)."""
    from npusim.npu import _lazy

    _lazy._lazy_init()
    return _OPTIONS["jitCompile"] == "disable"


_MM_BMM_ND_ENABLE = True


def set_mm_bmm_format_nd(is_nd: bool = True) -> None:
    global _MM_BMM_ND_ENABLE
    _MM_BMM_ND_ENABLE = bool(is_nd)


def get_mm_bmm_format_nd() -> bool:
    return _MM_BMM_ND_ENABLE


def set_aoe(dump_path: str) -> None:
    r"""Turn on AOE tuning with its graph dump folder (created if missing)."""
    if not os.path.exists(dump_path):
        try:
            os.makedirs(dump_path, mode=0o750, exist_ok=True)
        except TypeError:
            raise TypeError("Type of dump_path is invalid." + pta_error(ErrCode.TYPE)) from None
        except OSError:
            raise OSError("Value of dump_path is invalid." + pta_error(ErrCode.SYSCALL)) from None
    _set_options({"autotune": "enable", "autotunegraphdumppath": str(dump_path)})


def init_dump() -> None:
    _set_options({"mdldumpswitch": "enable"})


def set_dump(cfg_file: str) -> None:
    if not os.path.exists(cfg_file):
        raise AssertionError(f"cfg_file {cfg_file} path does not exists." + pta_error(ErrCode.NOT_FOUND))
    _set_options({"mdldumpconfigpath": os.path.realpath(cfg_file)})


def finalize_dump() -> None:
    _set_options({"mdldumpswitch": "disable"})


class _NpuConfig:
    """``torch.npu.config``: write-only, as torch_npu's (reading an attribute raises)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_internal_format":
            _set_options({"ALLOW_INTERNAL_FORMAT": "enable" if value else "disable"})
            return
        object.__setattr__(self, name, value)


class CubeMathType(enum.IntEnum):
    """How the Cube computes fp32 matrix products (``torch.npu.matmul.cube_math_type``)."""

    KEEP_DTYPE = 0
    ALLOW_FP32_DOWN_PRECISION = 1
    USE_FP16 = 2
    USE_HF32 = 3
    USE_FP32_ADD = 4


class _HF32Switch:
    """``torch.npu.matmul`` / ``torch.npu.conv``: the ``allow_hf32`` switch of one option."""

    def __init__(self, option: str):
        object.__setattr__(self, "_option", option)
        object.__setattr__(self, "_cube_math_type", None)

    @property
    def allow_hf32(self) -> bool:
        return _OPTIONS[self._option] == "enable"

    @allow_hf32.setter
    def allow_hf32(self, value: bool) -> None:
        _set_options({self._option: "enable" if value else "disable"})
        object.__setattr__(self, "_cube_math_type", None)

    @property
    def cube_math_type(self) -> CubeMathType:
        if self._cube_math_type is not None:
            return self._cube_math_type
        return CubeMathType.USE_HF32 if self.allow_hf32 else CubeMathType.KEEP_DTYPE

    @cube_math_type.setter
    def cube_math_type(self, value: int) -> None:
        math_type = CubeMathType(int(value))
        _set_options({self._option: "enable" if math_type == CubeMathType.USE_HF32 else "disable"})
        object.__setattr__(self, "_cube_math_type", math_type)


config = _NpuConfig()
matmul = _HF32Switch("ALLOW_MATMUL_HF32")
conv = _HF32Switch("ALLOW_CONV_HF32")


# ---------------------------------------------------------------------------------------------
# Scaled-dot-product attention back ends. torch_npu sets PyTorch's global flags and warns that
# its fused kernel ignores them; npusim's fused path follows the CPU's choice, which reads them.


def flash_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support flash sdp and only sets the global variable!")
    return torch._C._get_flash_sdp_enabled()


def enable_flash_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support flash sdp and only sets the global variable!")
    torch._C._set_sdp_use_flash(enabled)


def mem_efficient_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support mem_efficient sdp and only sets Global variable!")
    return torch._C._get_mem_efficient_sdp_enabled()


def enable_mem_efficient_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support mem_efficient sdp and only sets Global variable!")
    torch._C._set_sdp_use_mem_efficient(enabled)


def math_sdp_enabled() -> bool:
    warnings.warn("Currently, the device operator does not support math sdp and only sets Global variable!")
    return torch._C._get_math_sdp_enabled()


def enable_math_sdp(enabled: bool) -> None:
    warnings.warn("Currently, the device operator does not support math sdp and only sets Global variable!")
    torch._C._set_sdp_use_math(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True):
    r"""Temporarily enable or disable the SDPA back ends; the previous flags come back on exit."""
    warnings.warn(
        "Currently, the device operator does not support flash, math, mem_efficient sdp "
        "and only sets the global variable!"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = (flash_sdp_enabled(), mem_efficient_sdp_enabled(), math_sdp_enabled())
        enable_flash_sdp(enable_flash)
        enable_mem_efficient_sdp(enable_mem_efficient)
        enable_math_sdp(enable_math)
    try:
        yield {}
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enable_flash_sdp(previous[0])
            enable_mem_efficient_sdp(previous[1])
            enable_math_sdp(previous[2])


def preferred_linalg_library(backend: Any = None):
    warnings.warn("torch.npu.preferred_linalg_library isn't implemented!")
    return torch._C._LinalgBackend.Default


# ---------------------------------------------------------------------------------------------
# Deterministic computation from a point of the graph on, in the forward and the backward


class _DeterministicSwitch(torch.autograd.Function):
    """Sets deterministic algorithms to ``enabled`` in the forward pass and back to the opposite
    where the backward pass reaches this point (it runs the region in reverse order)."""

    @staticmethod
    def forward(ctx, tensor, enabled):
        ctx.enabled = enabled
        torch.use_deterministic_algorithms(enabled)
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad):
        torch.use_deterministic_algorithms(not ctx.enabled)
        return grad, None


def _check_tensor(tensor: Any, name: str) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, but got {type(tensor)}" + pta_error(ErrCode.TYPE))


def enable_deterministic_with_backward(tensor: torch.Tensor) -> torch.Tensor:
    r"""Turn deterministic algorithms on here, in the forward and in the backward pass."""
    _check_tensor(tensor, "enable_deterministic_with_backward")
    return _DeterministicSwitch.apply(tensor, True)


def disable_deterministic_with_backward(tensor: torch.Tensor) -> torch.Tensor:
    r"""Turn deterministic algorithms off here, in the forward and in the backward pass."""
    _check_tensor(tensor, "disable_deterministic_with_backward")
    return _DeterministicSwitch.apply(tensor, False)


# ---------------------------------------------------------------------------------------------
# Core limits, op timeout, sync debug mode

_DEVICE_LIMITS: dict[int, dict[str, int]] = {}


def _cores(device: int) -> tuple[int, int]:
    from npusim.npu import devices

    properties = devices.get_device_properties(device)
    return int(properties.cube_core_num), int(properties.vector_core_num)


class _CallOnce:
    """torch_npu's once-only setting: the first call (successful or not) uses it up; later calls
    raise. ``called`` can be reset, as torch_npu's own tests do."""

    def __init__(self, func):
        self.func = func
        self.called = False
        self.result = None
        functools.update_wrapper(self, func)

    def __call__(self, *args, **kwargs):
        if self.called:
            raise RuntimeError(
                f"Function '{self.func.__name__}' has already been called, You can only set this interface once."
            )
        self.called = True
        self.result = self.func(*args, **kwargs)
        return self.result


def _checked_device(device: Any) -> int:
    """The device argument of the core-limit functions: an int naming a visible device."""
    from npusim.npu import devices

    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, but got {type(device).__name__}" + pta_error(ErrCode.TYPE))
    if device < 0 or device >= devices.device_count():
        raise AssertionError("Invalid device id" + pta_error(ErrCode.VALUE))
    return device


@_CallOnce
def set_device_limit(device: int, cube_num: int = -1, vector_num: int = -1) -> None:
    r"""Limit the Cube and Vector cores that kernels on ``device`` may use (-1: no change). As in
    torch_npu, it can be called once per process.

    npusim prices a kernel on the Cube (or Vector) unit at (all cores / allowed cores) times its
    unlimited time: a first-order model that ignores wave quantisation."""
    index = _checked_device(device)
    cube_max, vector_max = _cores(index)
    limits = _DEVICE_LIMITS.setdefault(index, {"cube_core_num": cube_max, "vector_core_num": vector_max})
    for key, value, most in (("cube_core_num", cube_num, cube_max), ("vector_core_num", vector_num, vector_max)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{key.split('_')[0]}_num must be an int, but got {type(value)}" + pta_error(ErrCode.TYPE))
        if value == -1:
            continue
        if not 0 < value <= most:
            raise ValueError(
                f"{key.split('_')[0]}_num should be in [1, {most}] for this device, but got {value}"
                + pta_error(ErrCode.VALUE)
            )
        limits[key] = value
    # Kernels on this device run on fewer cores: the cost model stretches their time.
    _C._set_core_limit_factors(index, cube_max / limits["cube_core_num"], vector_max / limits["vector_core_num"])


def get_device_limit(device: int) -> dict[str, int]:
    r"""The core limits of ``device``: ``{"cube_core_num": ..., "vector_core_num": ...}``."""
    index = _checked_device(device)
    cube_max, vector_max = _cores(index)
    return dict(_DEVICE_LIMITS.get(index, {"cube_core_num": cube_max, "vector_core_num": vector_max}))


_OP_TIMEOUT_MS: int | None = None
_UINT32_MAX = 2**32 - 1


def set_op_timeout_ms(timeout_ms: int) -> None:
    r"""The time after which a kernel that does not finish is an error (milliseconds, an unsigned
    32-bit value as the runtime takes it; simulated kernels never hang, the value is recorded)."""
    global _OP_TIMEOUT_MS
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise TypeError(
            f"set_op_timeout_ms(): argument 'timeout' must be int, not {type(timeout_ms).__name__}"
        )
    # The binding unpacks an unsigned 32-bit integer: Python's and PyTorch's texts.
    if timeout_ms < 0:
        raise OverflowError("can't convert negative value to unsigned int")
    if timeout_ms > _UINT32_MAX:
        raise RuntimeError("Overflow when unpacking unsigned long")
    _OP_TIMEOUT_MS = timeout_ms


_SYNC_DEBUG_NOTE_SHOWN = False


def set_sync_debug_mode(debug_mode: int | str) -> None:
    r"""Warn about (``"warn"``, 1) or refuse (``"error"``, 2) operations that make the host wait for
    the device; ``"default"`` (0) is silent."""
    global _SYNC_DEBUG_NOTE_SHOWN
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`" + pta_error(ErrCode.PARAM)
            )
        debug_mode = names[debug_mode]
    if not _SYNC_DEBUG_NOTE_SHOWN:
        _SYNC_DEBUG_NOTE_SHOWN = True
        warnings.warn(
            "Synchronization debug mode is a prototype feature and does not yet detect all synchronizing operations"
        )
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise RuntimeError(
            "invalid argument to set_sync_debug_mode, debug_mode type must long" + pta_error(ErrCode.PARAM)
        )
    if not 0 <= debug_mode <= 2:
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2" + pta_error(ErrCode.VALUE))
    _C._set_sync_debug_mode(debug_mode)


def use_compatible_impl(is_enable: bool) -> None:
    r"""Ask torch_npu's operators for their implementations that match PyTorch's (the option
    ``TORCH_NPU_USE_COMPATIBLE_IMPL``). npusim's operators are PyTorch's kernels already; the
    switch is recorded."""
    _set_options({"TORCH_NPU_USE_COMPATIBLE_IMPL": "1" if is_enable else "0"})


def are_compatible_impl_enabled() -> bool:
    r"""Whether :func:`use_compatible_impl` is on."""
    return _OPTIONS.get("TORCH_NPU_USE_COMPATIBLE_IMPL") == "1"


def get_sync_debug_mode() -> int:
    r"""The current sync debug mode (0, 1 or 2)."""
    return int(_C._get_sync_debug_mode())

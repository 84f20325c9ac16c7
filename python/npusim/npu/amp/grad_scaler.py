"""``torch.npu.amp.GradScaler`` (and ``torch_npu.npu.amp.GradScaler``): PyTorch's device-generic
gradient scaler on ``npu``, with what torch_npu's own scaler adds.

``torch.amp.GradScaler("npu")`` needs nothing from npusim beyond the two ``_amp_*`` kernels: the
non-finite check and unscale (``csrc/backend/numerics/InfNanMode.cpp``, torch_npu's semantics, including
the once-per-process warning ``Non finite check and unscale on NPU device!``) and the scale update
(PyTorch's CPU kernel on device memory). This subclass behaves as torch_npu's
``torch_npu.npu.amp.GradScaler``:

- a ``dynamic`` argument (default ``True``); ``dynamic=False`` is a static loss scale: gradients
  are unscaled without the non-finite check, every step is taken, the scale never changes;
- ``state_dict()`` carries ``"dynamic"``;
- the messages torch_npu prints, which users see in their logs: ``Gradient overflow. Skipping step``
  for a skipped step, ``Loss scaler reducing loss scale to <scale>`` after a backoff and
  ``Loss scaler increasing loss scale to <scale>`` after a growth;
- one overflow skips the whole iteration: once the gradients of any optimizer overflowed, every
  later ``step()`` before ``update()`` is skipped too, whatever its own gradients (torch_npu's
  ``_has_overflow``), so models trained together with several optimizers stay in step;
- in saturation mode (``INF_NAN_MODE_FORCE_DISABLE=1``), where overflowed gradients are finite, the
  overflow flag decides: the scaler clears it at the first ``scale()`` of an iteration and, with
  ``torch.distributed`` initialized, sums the overflow over the ranks.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from typing import Any

import torch
from torch.amp.grad_scaler import _refresh_per_optimizer_state

from npusim._error_code import ErrCode, pta_error
from npusim.npu.amp.common import amp_definitely_not_available
from npusim.npu.inf_nan_mode import clear_npu_overflow_flag, get_npu_overflow_flag, is_support_inf_nan

__all__ = ["GradScaler"]


class GradScaler(torch.amp.GradScaler):
    r"""``torch.amp.GradScaler("npu", ...)`` with torch_npu's ``dynamic`` switch and messages.

    Args:
        init_scale (float): the initial scale factor (default ``2.0**16``).
        growth_factor (float): the factor applied after ``growth_interval`` steps without
            Inf/NaN gradients (default ``2.0``).
        backoff_factor (float): the factor applied after a step with Inf/NaN gradients
            (default ``0.5``).
        growth_interval (int): consecutive good steps before growth (default ``2000``).
        dynamic (bool): ``False`` for a static loss scale (default ``True``).
        enabled (bool): ``False`` makes every method a no-op (default ``True``).
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        dynamic: bool = True,
        enabled: bool = True,
    ) -> None:
        if enabled and amp_definitely_not_available():
            warnings.warn("torch_npu.amp.GradScaler is enabled, but NPU is not available.  Disabling.")
            enabled = False
        if enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0." + pta_error(ErrCode.VALUE))
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0." + pta_error(ErrCode.VALUE))
        super().__init__(
            "npu",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
        self._dynamic = dynamic
        self._clear_overflow_flag = False
        self._has_overflow = False  # an overflow seen since the last update()

    # -- scaling ---------------------------------------------------------------------------

    def scale(self, outputs):  # type: ignore[override]
        if self._enabled and self._dynamic and not self._clear_overflow_flag:
            # Saturation mode: the iteration starts with a clean float status register.
            if not is_support_inf_nan():
                clear_npu_overflow_flag()
            self._clear_overflow_flag = True
        return super().scale(outputs)

    # PyTorch's texts of the scaler's state errors; torch_npu raises them with its error codes.
    _STATE_ERRORS = {
        "unscale_() has already been called on this optimizer since the last update().": ErrCode.INTERNAL,
        "unscale_() is being called after step().": ErrCode.INTERNAL,
        "step() has already been called since the last update().": ErrCode.INTERNAL,
        "No inf checks were recorded for this optimizer.": ErrCode.INTERNAL,
        "Closure use is not currently supported if GradScaler is enabled.": ErrCode.NOT_SUPPORT,
    }

    def _with_error_code(self, method, *args: Any, **kwargs: Any):
        try:
            return method(*args, **kwargs)
        except RuntimeError as error:
            code = self._STATE_ERRORS.get(str(error))
            if code is None:
                raise
            raise RuntimeError(str(error) + pta_error(code)) from None

    def unscale_(self, optimizer) -> None:  # type: ignore[override]
        self._with_error_code(super().unscale_, optimizer)

    def step(self, optimizer, *args: Any, **kwargs: Any):  # type: ignore[override]
        return self._with_error_code(super().step, optimizer, *args, **kwargs)

    def _check_new_scale(self, new_scale: Any) -> None:
        if new_scale is None or isinstance(new_scale, float):
            return
        reason = "new_scale should be a float or a 1-element torch.npu.FloatTensor with requires_grad=False."
        if not (isinstance(new_scale, torch.Tensor) and new_scale.is_npu and new_scale.dtype == torch.float32):
            raise TypeError(reason + pta_error(ErrCode.TYPE))
        if new_scale.numel() != 1 or new_scale.requires_grad:
            raise ValueError(reason + pta_error(ErrCode.VALUE))

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):  # type: ignore[override]
        if not allow_fp16:
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is not None and param.grad.dtype == torch.float16:
                        raise TypeError("Attempting to unscale FP16 gradients." + pta_error(ErrCode.TYPE))
        if self._dynamic:
            found_inf_per_device = super()._unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16)
            self._sum_overflow_over_ranks(found_inf_per_device)
            if any(v.item() > 0 for v in found_inf_per_device.values()):
                self._has_overflow = True
            elif self._has_overflow:
                # An earlier optimizer of this iteration overflowed: this one is skipped as well.
                found_inf.add_(1)
            return found_inf_per_device
        # Static loss scale: unscale, check nothing.
        with torch.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    grad = param.grad._values() if param.grad.is_sparse else param.grad
                    grad.mul_(inv_scale.to(grad.device))
        return {found_inf.device: found_inf}

    def _sum_overflow_over_ranks(self, found_inf_per_device: dict[torch.device, torch.Tensor]) -> None:
        # In saturation mode each rank only knows its own overflow flag; torch_npu sums the
        # overflow over the ranks so that all of them skip the same steps.
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or is_support_inf_nan():
            return
        for found_inf in found_inf_per_device.values():
            dist.all_reduce(found_inf)

    def _maybe_opt_step(self, optimizer, optimizer_state, *args: Any, **kwargs: Any):  # type: ignore[override]
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()) and not self._has_overflow:
            return optimizer.step(*args, **kwargs)
        print("Gradient overflow. Skipping step")
        return None

    def update(self, new_scale: float | torch.Tensor | None = None) -> None:
        if not self._enabled:
            return
        self._check_new_scale(new_scale)
        if new_scale is None and not self._dynamic:
            # A static loss scale does not move.
            self._check_scale_growth_tracker("update")
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
            self._clear_overflow_flag = False
            self._has_overflow = False
            return
        scale, _ = self._check_scale_growth_tracker("update")
        before = scale.item() if new_scale is None else None
        super().update(new_scale)
        self._clear_overflow_flag = False
        self._has_overflow = False
        if before is None:
            return
        after = self.get_scale()
        if after < before:
            print(f"Loss scaler reducing loss scale to {after}")
        elif after > before:
            print(f"Loss scaler increasing loss scale to {after}")

    # -- state -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self._enabled:
            state["dynamic"] = self._dynamic
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        super().load_state_dict(state_dict)
        # A state saved by torch.amp.GradScaler has no "dynamic": a dynamic scale.
        self._dynamic = bool(state_dict.get("dynamic", True))

    # torch_npu's scaler offers the overflow-flag functions as static methods.
    get_npu_overflow_flag = staticmethod(get_npu_overflow_flag)
    clear_npu_overflow_flag = staticmethod(clear_npu_overflow_flag)

"""The loss curve of a run, taken from the program's ``backward()`` calls.

A training step ends in ``loss.backward()``; the scalar it is called on is the loss, whatever
the program prints. With a gradient scaler the program calls ``scaler.scale(loss).backward()``:
the loss is then the value ``scale()`` received, and the scaled product is not recorded again.
Non-scalar ``backward(gradient)`` calls are not losses and are skipped.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any, Callable

import torch

__all__ = ["LossRecorder"]


class LossRecorder:
    def __init__(self, current_step: Callable[[], int], internal: Callable[[], Any]) -> None:
        """``current_step()`` is the step a loss belongs to; ``internal()`` a context in which
        reading the value is not dumped."""
        self.points: list[dict[str, Any]] = []
        self._current_step = current_step
        self._internal = internal
        self._scaled: "weakref.WeakSet[torch.Tensor]" = weakref.WeakSet()
        self._originals: list[tuple[Any, str, Any]] = []
        # Tensor.backward hands itself to torch function modes, which call it again.
        self._inside = threading.local()

    def install(self) -> None:
        recorder = self
        original_backward = torch.Tensor.backward

        @functools.wraps(original_backward)
        def backward(tensor, *args, **kwargs):
            if getattr(recorder._inside, "active", False):
                return original_backward(tensor, *args, **kwargs)
            if tensor not in recorder._scaled:
                recorder.record(tensor)
            recorder._inside.active = True
            try:
                return original_backward(tensor, *args, **kwargs)
            finally:
                recorder._inside.active = False

        self._replace(torch.Tensor, "backward", backward)
        scaler_class = getattr(torch.amp, "GradScaler", None)
        if scaler_class is not None:
            original_scale = scaler_class.scale

            @functools.wraps(original_scale)
            def scale(scaler, outputs):
                result = original_scale(scaler, outputs)
                if isinstance(outputs, torch.Tensor) and isinstance(result, torch.Tensor) and result is not outputs:
                    recorder.record(outputs)
                    recorder._scaled.add(result)
                return result

            self._replace(scaler_class, "scale", scale)

    def _replace(self, owner: Any, name: str, value: Any) -> None:
        self._originals.append((owner, name, owner.__dict__.get(name, getattr(owner, name))))
        setattr(owner, name, value)

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._originals):
            setattr(owner, name, value)
        self._originals.clear()

    def record(self, tensor: torch.Tensor) -> None:
        try:
            if tensor.numel() != 1:
                return
            with self._internal():
                value = float(tensor.detach().float().cpu().reshape(()))
        except Exception:
            return
        self.points.append({"step": self._current_step(), "index": len(self.points),
                            "loss": value if math.isfinite(value) else str(value)})

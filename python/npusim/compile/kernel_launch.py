"""The launch of one kernel Inductor generated for npu, as the timeline sees it.

A generated C++ kernel runs on the host straight on npu memory, outside the dispatcher, so
the executor never sees it. The wrapper calls the kernel, then charges the simulated timeline
once for it as one fused kernel: one dispatch, and the bytes its pointer arguments cover
(read-only arguments read once, written ones written once). With static shapes the bytes are
computed when the graph compiles and bound into one charging function per kernel when the
graph's module loads (:func:`npu_kernel_charger`); with dynamic shapes they are read from the
tensors at run time (:func:`npu_charge_tensors`).
"""

from __future__ import annotations

import torch

from npusim import _C
from npusim.compile import _native

npu_estimating = _C._estimate_only

# Captures in progress (npusim.compile.graphs): a generated kernel runs outside the dispatcher,
# so an NPUGraph capture could not record it; it refuses instead of replaying wrong results.
active_captures = 0


def _refuse_in_capture(name: str) -> None:
    from npusim.compile.graphs import is_current_stream_capturing, uncapturable

    if is_current_stream_capturing():
        raise uncapturable(name)


def npu_charge_kernel(device: int, name: str, read_bytes: int, written_bytes: int, elements: int) -> None:
    if active_captures:
        _refuse_in_capture(name)
    _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)


def npu_kernel_charger(device: int, name: str, read_bytes: int, written_bytes: int, elements: int):
    """What a compiled npu graph calls after a generated kernel with static shapes: the same
    charge as :func:`npu_charge_kernel`, prepared once when the graph's module loads."""
    charge = _native.fused_kernel_charger(device, read_bytes, written_bytes, elements)
    totals = _native.kernel_totals

    def charge_launch() -> None:
        if active_captures:
            _refuse_in_capture(name)
        entry = totals[name]
        entry[0] += 1
        entry[1] += charge()

    return charge_launch


def npu_charge_tensors(name: str, reads: tuple, writes: tuple) -> None:
    if active_captures:
        _refuse_in_capture(name)
    read_bytes = written_bytes = elements = 0
    device = -1
    for index, group in enumerate((reads, writes)):
        for tensor in group:
            if not isinstance(tensor, torch.Tensor):
                continue
            size = tensor.numel() * tensor.element_size()
            if index == 0:
                read_bytes += size
            else:
                written_bytes += size
            elements = max(elements, tensor.numel())
            if device < 0 and tensor.device.type == "npu":
                device = tensor.device.index
    if device >= 0:
        _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)

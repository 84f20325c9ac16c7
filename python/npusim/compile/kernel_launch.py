"""The launch of one kernel Inductor generated for npu, as the timeline sees it.

A generated C++ kernel runs on the host straight on npu memory, outside the dispatcher, so
the executor never sees it. The wrapper launches it through a launcher of this module, which
runs the kernel (not in estimate-only mode, where buffers have shapes but no data), then
charges the simulated timeline once for it as one fused kernel: one dispatch, and the bytes
its pointer arguments cover (read-only arguments read once, written ones written once). With
static shapes the bytes are computed when the graph compiles and bound into one launcher per
kernel when the graph's module loads (:func:`npu_kernel_launcher`); with dynamic shapes
:func:`npu_launch_counted` reads them from the tensors at run time. While an NPUGraph capture
runs, every launch is also handed to the recorder the capture registered
(:func:`set_capture_recorder`, called by :mod:`npusim.compile.graphs`), which keeps the launches
of the capturing stream with the tensors they ran on, so a replay runs them again on the
captured memory: the recorder gets ``run(arguments)``, which launches and charges the kernel on
the arguments it is given (the graph replaces the tensors it does not own by aliases).
"""

from __future__ import annotations

from typing import Callable

import torch

from npusim import _C
from npusim.compile import _native

npu_estimating = _C._estimate_only

# The recorder of the NPUGraph capture in progress, ``recorder(name, run, arguments)`` where
# ``run(arguments)`` launches the kernel again, or None: the launches look for it only while a
# capture runs.
_capture_recorder: Callable[[str, Callable[[tuple], None], tuple], None] | None = None


def set_capture_recorder(recorder: Callable[[str, Callable[[tuple], None], tuple], None] | None) -> None:
    """Hand every launch to ``recorder`` from now on (None: stop); the graph module sets it for
    the duration of a capture."""
    global _capture_recorder
    _capture_recorder = recorder


def npu_kernel_launcher(device: int, name: str, read_bytes: int, written_bytes: int, elements: int):
    """What a compiled npu graph calls for a generated kernel with static shapes:
    ``launch(kernel, arguments)``, with its charge prepared once when the graph's module loads."""
    charge = _native.fused_kernel_charger(device, read_bytes, written_bytes, elements)
    totals = _native.kernel_totals

    def run(kernel, arguments: tuple) -> None:
        if not npu_estimating():
            kernel(*arguments)
        entry = totals[name]
        entry[0] += 1
        entry[1] += charge()

    def launch(kernel, arguments: tuple) -> None:
        run(kernel, arguments)
        recorder = _capture_recorder
        if recorder is not None:
            recorder(name, lambda captured: run(kernel, captured), arguments)

    return launch


def _traffic(reads: tuple, writes: tuple) -> tuple[int, int, int, int]:
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
    return device, read_bytes, written_bytes, elements


def npu_launch_counted(kernel, arguments: tuple, name: str, reads: tuple, writes: tuple) -> None:
    """The launch of a kernel with dynamic shapes: its bytes are read from the tensors."""
    if not npu_estimating():
        kernel(*arguments)
    device, read_bytes, written_bytes, elements = _traffic(reads, writes)
    if device >= 0:
        _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)
        recorder = _capture_recorder
        if recorder is not None:

            def replay(captured: tuple) -> None:
                if not npu_estimating():
                    kernel(*captured)
                _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)

            recorder(name, replay, arguments)

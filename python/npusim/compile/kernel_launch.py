"""The launch of one kernel Inductor generated for npu, as the timeline sees it.

A generated C++ kernel runs on the host straight on npu memory, outside the dispatcher, so
the executor never sees it. The wrapper launches it through :func:`npu_launch`, which runs the
kernel, then charges the simulated timeline once for it as one fused kernel: one dispatch, and
the bytes its pointer arguments cover (read-only arguments read once, written ones written
once). With static shapes the bytes are computed when the graph compiles; with dynamic shapes
:func:`npu_launch_counted` reads them from the tensors at run time. A launch on a stream that
is capturing an NPUGraph is also recorded into that graph, with the tensors it ran on, so a
replay runs it again on the captured memory.
"""

from __future__ import annotations

import torch

from npusim import _C
from npusim.compile import _native

npu_estimating = _C._estimate_only

# Captures in progress (npusim.compile.graphs); the launches only look for one when it is not 0.
active_captures = 0


def _record(name: str, replay, arguments: tuple) -> None:
    from npusim.compile import graphs

    capture = graphs.active_capture()
    if capture is not None and graphs.is_current_stream_capturing():
        capture._record_kernel(name, replay, arguments)


def npu_launch(kernel, arguments: tuple, device: int, name: str, read_bytes: int, written_bytes: int,
               elements: int) -> None:
    # Estimate-only mode (npusim.estimate()) prices kernels without computing them, as it does
    # for eager operators: the buffers have shapes, not data.
    if not npu_estimating():
        kernel(*arguments)
    _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)
    if active_captures:

        def replay() -> None:
            if not npu_estimating():
                kernel(*arguments)
            _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)

        _record(name, replay, arguments)


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
    if not npu_estimating():
        kernel(*arguments)
    device, read_bytes, written_bytes, elements = _traffic(reads, writes)
    if device >= 0:
        _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)
        if active_captures:

            def replay() -> None:
                if not npu_estimating():
                    kernel(*arguments)
                _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)

            _record(name, replay, arguments)

"""The launch of one kernel Inductor generated for npu, as the timeline sees it.

A generated C++ kernel runs on the host straight on npu memory, outside the dispatcher, so
the executor never sees it. The wrapper launches it through a launcher of this module, which
runs the kernel (not in estimate-only mode, where buffers have shapes but no data), then
charges the simulated timeline once for it as one fused kernel: one dispatch, and the bytes
its pointer arguments cover (read-only arguments read once, written ones written once). With
static shapes the bytes are computed when the graph compiles and bound into one launcher per
kernel when the graph's module loads (:func:`npu_kernel_launcher`); with dynamic shapes
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
        if active_captures:
            _record(name, lambda: run(kernel, arguments), arguments)

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
        if active_captures:

            def replay() -> None:
                if not npu_estimating():
                    kernel(*arguments)
                _native.charge_fused_kernel(device, name, read_bytes, written_bytes, elements)

            _record(name, replay, arguments)

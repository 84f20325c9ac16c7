"""The launch of one kernel Inductor generated for npu, as the timeline sees it.

A generated C++ kernel runs on the host straight on npu memory, outside the dispatcher, so
the executor never sees it. The wrapper calls it through :func:`npu_kernel_launch`, which runs
it and charges the simulated timeline once for the fused kernel: one dispatch, and the bytes
its pointer arguments cover (read-only arguments read once, written ones written once).
"""

from __future__ import annotations

import torch

from npusim.compile import _native


def npu_kernel_launch(name: str, kernel, args: tuple, reads: tuple, writes: tuple) -> None:
    kernel(*args)
    read_bytes = 0
    write_bytes = 0
    device = -1
    elements = 0
    for tensor in reads:
        if isinstance(tensor, torch.Tensor):
            read_bytes += tensor.numel() * tensor.element_size()
            elements = max(elements, tensor.numel())
            if device < 0 and tensor.device.type == "npu":
                device = tensor.device.index
    for tensor in writes:
        if isinstance(tensor, torch.Tensor):
            write_bytes += tensor.numel() * tensor.element_size()
            elements = max(elements, tensor.numel())
            if device < 0 and tensor.device.type == "npu":
                device = tensor.device.index
    if device >= 0:
        _native.charge_fused_kernel(device, name, read_bytes, write_bytes, elements)

"""Loads ``libnpusim_ops``: torch_npu's own operators as ``torch.ops.npu.*`` (schemas, npu and Meta
kernels, autograd; C++ in ``csrc/ops``). It sits on the backend library, which ``npusim._C``
loaded first."""

from __future__ import annotations

import os

_LOADED = False


def load() -> None:
    global _LOADED
    if _LOADED:
        return
    import torch

    torch.ops.load_library(os.path.join(os.path.dirname(__file__), "libnpusim_ops.so"))
    _LOADED = True

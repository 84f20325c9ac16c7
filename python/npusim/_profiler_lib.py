"""Loads ``libnpusim_profiler``: the npu device in ``torch.profiler`` (C++ in ``csrc/profiler``). Its
static registration hands a Kineto activity profiler to PyTorch's PrivateUse1 profiler registry, so
``ProfilerActivity.PrivateUse1`` (``ProfilerActivity.NPU``) records the simulated device."""

from __future__ import annotations

import ctypes
import os

_LOADED = False


def load() -> None:
    global _LOADED
    if _LOADED:
        return
    # RTLD_GLOBAL is not needed: the library only registers itself with torch on load. Without it
    # the device still works; torch.profiler then only sees the host.
    try:
        ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libnpusim_profiler.so"))
    except OSError as error:
        import warnings

        warnings.warn(f"npusim: the npu device is not visible to torch.profiler ({error})", RuntimeWarning)
        return
    _LOADED = True

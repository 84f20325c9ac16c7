"""``torch.npu.backends.fft_plan_cache``: the plan cache of the NPU's FFT operators.

Each transformed dimension of ``torch.fft`` on npu takes a plan from a least-recently-used
cache, as torch_npu's FFT kernels do: ``size`` is the number of cached plans (read-only),
``max_size`` the capacity (1 to 99, 10 at start; shrinking it drops the least recently used
plans), ``clear()`` empties it.
"""

from __future__ import annotations

from npusim import _C

__all__ = ["NPUFFTPlanCache"]


class NPUFFTPlanCache:
    def __getattr__(self, name):
        if name == "size":
            return int(_C._fft_plan_cache_size())
        if name == "max_size":
            return int(_C._fft_plan_cache_max_size())
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "size":
            raise RuntimeError(".size is a read-only property showing the number of plans currently in the cache.")
        if name == "max_size":
            return _C._set_fft_plan_cache_max_size(value)
        raise AttributeError("Unknown attribute " + name)

    def clear(self):
        _C._clear_fft_plan_cache()

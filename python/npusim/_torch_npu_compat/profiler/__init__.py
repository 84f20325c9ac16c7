"""``torch_npu.profiler``: npusim's profiler (``npusim.profiler``)."""

from npusim.profiler import *  # noqa: F401,F403
from npusim.profiler import _ExperimentalConfig, analyse  # noqa: F401
from npusim.profiler import profile as profile  # noqa: F401

from . import profiler  # noqa: E402,F401  (torch_npu.profiler.profiler.analyse)

"""``torch.npu``: the device module of the simulated Ascend NPU.

npusim registers this package with ``torch._register_device_module("npu", ...)``, so it is
``torch.npu`` (and, through the torch_npu compatibility layer, ``torch_npu.npu``). It behaves
as torch_npu's ``torch.npu``; it is split by concern:

- :mod:`._lazy`: lazy initialization and the fork check,
- :mod:`.devices`: counting, selecting and describing devices,
- :mod:`.streams`: streams and events,
- :mod:`.memory`: the caching allocator,
- :mod:`.random`: the default generators,
- :mod:`.amp`: automatic mixed precision.

Nothing here starts the runtime at import; the first call that needs a device does.
"""

from __future__ import annotations

import torch

from npusim.npu import amp, utils  # noqa: F401  (torch.npu.amp, torch.npu.utils)
from npusim.npu import _shutdown  # noqa: F401  (drains the autograd workers at exit)
from npusim.npu.amp import autocast_utils as _autocast_utils
from npusim.npu.amp.autocast_utils import *  # noqa: F401,F403
from npusim.npu.amp.inf_nan_mode import clear_npu_overflow_flag, get_npu_overflow_flag  # noqa: F401
from npusim.npu._lazy import (
    DeferredNpuCallError,
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    init,
    is_initialized,
)
from npusim.npu import devices as _devices
from npusim.npu import memory as _memory
from npusim.npu import random as _random
from npusim.npu import streams as _streams
from npusim.npu.devices import *  # noqa: F401,F403  (the public API, listed in each __all__)
from npusim.npu.devices import _get_device_index, _NPUDeviceProperties  # noqa: F401
from npusim.npu.random import default_generators  # noqa: F401
from npusim.npu.memory import *  # noqa: F401,F403
from npusim.npu.random import *  # noqa: F401,F403
from npusim.npu.streams import *  # noqa: F401,F403

# torch_npu's options and switches, versions, formats, legacy types, allocator controls.
from npusim.npu import _memory_viz, aclnn, backends, formats, options as _options, tensor_types as _tensor_types  # noqa: E402,F401
from npusim.npu.allocator_controls import MemPool, empty_with_swapped_memory, erase_stream, use_mem_pool  # noqa: E402,F401
from npusim.npu.npurt import npurt  # noqa: E402,F401
from npusim.npu.options import *  # noqa: E402,F401,F403
from npusim.npu.tensor_types import *  # noqa: E402,F401,F403
from npusim.npu.versions import get_soc_version  # noqa: E402,F401
from npusim.npu.utils import current_blas_handle  # noqa: E402,F401

__all__ = [
    *_devices.__all__,
    *_streams.__all__,
    *_memory.__all__,
    *_random.__all__,
    "init",
    "is_initialized",
    # amp (the subpackage torch.npu.amp is an attribute, not in __all__)
    *_autocast_utils.__all__,
    "get_npu_overflow_flag",
    "clear_npu_overflow_flag",
    *_options.__all__,
    *_tensor_types.__all__,
    "MemPool",
    "use_mem_pool",
    "erase_stream",
    "empty_with_swapped_memory",
    "npurt",
    "get_soc_version",
    "current_blas_handle",
]


# Inductor looks up a PrivateUse1 device's code generators on its device module; npusim builds
# them on first use (npusim.compile), so that importing torch does not import Inductor.
# The graph API (NPUGraph, graph, ...) is served from npusim.compile.graphs on first use too.
_INDUCTOR_CODEGEN_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")
_GRAPH_NAMES = ("NPUGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing")
__all__ += list(_GRAPH_NAMES)  # as torch_npu's __all__ (contract §4, Graphs)


def __getattr__(name: str):
    if name in _INDUCTOR_CODEGEN_NAMES:
        from npusim.compile import inductor_codegen

        return inductor_codegen(name)
    if name in _GRAPH_NAMES:
        from npusim.compile import graphs

        return getattr(graphs, name)
    raise AttributeError(f"module 'torch.npu' has no attribute '{name}'")

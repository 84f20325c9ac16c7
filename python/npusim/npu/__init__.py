"""``torch.npu``: the device module of the simulated Ascend NPU.

npusim registers this package with ``torch._register_device_module("npu", ...)``, so it is
``torch.npu`` (and, through the torch_npu compatibility layer, ``torch_npu.npu``). It behaves
as torch_npu's ``torch.npu``; it is split by concern:

- :mod:`._lazy`: lazy initialization and the fork check,
- :mod:`.devices`: counting, selecting and describing devices,
- :mod:`.streams`: streams and events,
- :mod:`.memory`: the caching allocator,
- :mod:`.random`: the default generators,
- :mod:`.autocast_utils` and :mod:`.inf_nan_mode`: the device's autocast state and its
  INF_NAN / saturation mode.

The features above the device add themselves when the package root loads them: ``torch.npu.amp``
is the subpackage :mod:`npusim.npu.amp` (imported by npusim's root), and :mod:`npusim.compile`
serves Inductor's code generators and the graph API through :func:`_serve_attributes`.

Nothing here starts the runtime at import; the first call that needs a device does.
"""

from __future__ import annotations

import typing as _typing  # under a private name: torch.npu's namespace is public

import torch

from npusim.npu import utils  # noqa: F401  (torch.npu.utils)
from npusim.npu import _shutdown  # noqa: F401  (drains the autograd workers at exit)
from npusim.npu import autocast_utils as _autocast_utils
from npusim.npu.autocast_utils import *  # noqa: F401,F403
from npusim.npu.inf_nan_mode import clear_npu_overflow_flag, get_npu_overflow_flag  # noqa: F401
from npusim.npu._lazy import (
    DeferredNpuCallError,
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    init,
    is_initialized,
)
from npusim.npu import devices as _devices
from npusim.npu import _acl_init
from npusim.npu._lazy import register_initialization_steps as _register_initialization_steps

# TORCH_ACL_INIT_CONFIG_PATH is checked before aclInit; ACL_OP_INIT_MODE is read once it ran.
_register_initialization_steps(before_start=_acl_init.check_acl_init_config, after_start=_acl_init.acl_op_init_mode)
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
from npusim.npu._recovery import _get_uce_addr, check_uce_in_memory, restart_device, stop_device  # noqa: E402,F401

__all__ = [
    *_devices.__all__,
    *_streams.__all__,
    *_memory.__all__,
    *_random.__all__,
    "init",
    "is_initialized",
    # the autocast state (the subpackage torch.npu.amp, loaded by npusim's root, is not in __all__)
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
    "stop_device",
    "restart_device",
    "check_uce_in_memory",
]


# Attributes that a feature above the device serves on first use, by name: npusim.compile
# registers Inductor's code generators (Inductor looks them up on a PrivateUse1 device's module)
# and the graph API (NPUGraph, graph, ...), so that importing torch imports neither.
_served_attributes = {}  # name -> serve(name); not annotated: torch.npu gets no __annotations__


def _serve_attributes(
    names: _typing.Iterable[str], serve: _typing.Callable[[str], _typing.Any], public: bool = False
) -> None:
    """Serve each of ``names`` as ``torch.npu.<name>`` through ``serve(name)`` on first access;
    ``public`` names join ``__all__``. Called by the features as npusim's root loads them."""
    for name in names:
        _served_attributes[name] = serve
        if public and name not in __all__:
            __all__.append(name)


def __getattr__(name: str):
    serve = _served_attributes.get(name)
    if serve is not None:
        return serve(name)
    raise AttributeError(f"module 'torch.npu' has no attribute '{name}'")

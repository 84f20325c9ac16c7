"""Automatic CUDA-to-NPU migration at run time: what ``from torch_npu.contrib import
transfer_to_npu`` (or ``TORCH_TRANSFER_TO_NPU=1``) does in torch_npu (contract §14).

:func:`apply` patches PyTorch in place, once per process:

- ``torch.cuda`` takes the functions of ``torch.npu`` (every name of ``torch.npu.__all__``),
  ``torch.cuda.amp`` / ``random`` / ``amp.autocast_mode`` / ``amp.common`` /
  ``amp.grad_scaler`` those of their npu counterparts, ``torch.cuda.default_generators`` the
  npu generators;
- ``Tensor.cuda`` / ``Tensor.is_cuda`` / ``Module.cuda`` become their npu versions;
- device arguments are rewritten ("cuda" -> "npu" in strings, ``torch.device('cuda:N')`` ->
  ``npu:N``, a bare int for ``to`` / ``to_empty`` -> ``npu:N``, dictionaries for
  ``map_location``) in the torch factory functions, ``Tensor.new_*`` / ``to`` /
  ``pin_memory``, ``Module.to`` / ``to_empty``, several ``torch.cuda`` functions,
  ``torch.cuda.device``, ``torch.autocast``, ``torch.UntypedStorage``, ``torch.fft.*freq``,
  the ``with torch.device(...)`` context, DDP and FSDP, and ``torch.Generator``;
  ``torch.device`` itself is a C type and stays as it is, so ``torch.device('cuda')`` objects
  are translated where they are passed to these functions;
- ``torch.distributed.init_process_group`` / ``new_group`` get "nccl" -> "hccl" and
  "cuda" -> "npu" in the backend string; ``is_nccl_available`` answers for hccl.

Better than torch_npu: a positional string is rewritten only when it is a device string
("cuda", "cuda:1"), so ``torch.load("cuda_model.pt")`` keeps its file name (torch_npu replaces
"cuda" in every positional string). Keyword device arguments are rewritten as in torch_npu.

Not done (unlike torch_npu): the ``torch.Event`` stand-in, the profiler swap, disabling
``torch.jit.script``, the Triton and Inductor switches, the per-library exceptions of
``apis_config.json``, and ``torch.cuda.DoubleTensor`` -> ``FloatTensor``.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import re
import sys
import types
import warnings
from typing import Any, Callable

import torch

__all__ = ["apply", "is_applied"]

_applied = False

# The torch.* functions whose device arguments are rewritten (contract §14).
TORCH_FUNCTIONS = [
    "logspace", "randint", "hann_window", "rand", "full_like", "ones_like", "rand_like", "randperm",
    "arange", "frombuffer", "normal", "_empty_per_channel_affine_quantized", "empty_strided",
    "empty_like", "scalar_tensor", "tril_indices", "bartlett_window", "ones", "sparse_coo_tensor",
    "randn", "kaiser_window", "tensor", "triu_indices", "as_tensor", "zeros", "randint_like", "full",
    "eye", "_sparse_csr_tensor_unsafe", "empty", "_sparse_coo_tensor_unsafe", "blackman_window",
    "zeros_like", "range", "sparse_csr_tensor", "randn_like", "from_file", "_cudnn_init_dropout_state",
    "_empty_affine_quantized", "linspace", "hamming_window", "empty_quantized", "_pin_memory", "load",
    "set_default_device", "get_device_module", "sparse_compressed_tensor",
]
TENSOR_METHODS = ["new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros", "to", "pin_memory"]
MODULE_METHODS = ["to", "to_empty"]
CUDA_FUNCTIONS = [
    "get_device_properties", "get_device_name", "get_device_capability", "list_gpu_processes", "set_device",
    "synchronize", "mem_get_info", "memory_stats", "memory_summary", "memory_allocated", "max_memory_allocated",
    "reset_max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_max_memory_cached",
    "reset_peak_memory_stats", "default_stream", "can_device_access_peer", "current_stream", "utilization",
    "set_per_process_memory_fraction", "caching_allocator_alloc",
]
DEVICE_KEYWORDS = ("device", "device_type", "map_location", "device_id")

_WRAPPED_MARK = "__npusim_transfer_original__"


# ---------------------------------------------------------------------------------------------
# Rewriting device arguments


_DEVICE_STRING = re.compile(r"^\s*cuda(:\d+)?\s*$")


def _rewrite_device(value: Any, replace_int: bool, any_string: bool = False) -> Any:
    if isinstance(value, str):
        if "cuda" not in value:
            return value
        if any_string or _DEVICE_STRING.match(value):
            return value.replace("cuda", "npu")
        return value
    if isinstance(value, torch.device):
        if value.type == "cuda":
            return torch.device("npu", value.index) if value.index is not None else torch.device("npu")
        return value
    if replace_int and isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    if isinstance(value, dict):
        return _rewrite_dict(value)
    return value


def _rewrite_dict(mapping: dict) -> dict:
    rewritten = {}
    for key, value in mapping.items():
        if isinstance(key, str):
            key = key.replace("cuda", "npu")
        if isinstance(value, str):
            value = value.replace("cuda", "npu")
        rewritten[key] = value
    return rewritten


def _rewrite_arguments(args: tuple, kwargs: dict, replace_int: bool) -> tuple[tuple, dict]:
    if args:
        args = tuple(_rewrite_device(arg, replace_int) for arg in args)
    if kwargs:
        for name in DEVICE_KEYWORDS:
            value = kwargs.get(name)
            if value is not None:
                # A keyword device may be a bare int in any function (device=0 means cuda:0).
                kwargs[name] = _rewrite_device(value, True, any_string=True)
        device_ids = kwargs.get("device_ids")
        if isinstance(device_ids, (list, tuple)):
            kwargs["device_ids"] = type(device_ids)(_rewrite_device(d, replace_int) for d in device_ids)
    return args, kwargs


def _wrap_device_function(fn: Callable) -> Callable:
    """``fn`` with its device arguments rewritten from cuda to npu."""
    if getattr(fn, _WRAPPED_MARK, None) is not None:
        return fn
    replace_int = getattr(fn, "__name__", "") in ("to", "to_empty")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args, kwargs = _rewrite_arguments(args, kwargs, replace_int)
        return fn(*args, **kwargs)

    setattr(wrapper, _WRAPPED_MARK, fn)
    return wrapper


def _wrap_attributes(owner: Any, names: list[str]) -> list[str]:
    """Wrap the named callables of ``owner`` in place; return the names that exist."""
    done = []
    for name in names:
        fn = getattr(owner, name, None)
        if fn is None or not callable(fn):
            continue
        setattr(owner, name, _wrap_device_function(fn))
        done.append(name)
    return done


def _wrap_init(cls: type) -> None:
    init = cls.__dict__.get("__init__")
    if init is not None and getattr(init, _WRAPPED_MARK, None) is None:
        cls.__init__ = _wrap_device_function(init)


class _DeviceRewritingMeta(type):
    """Metaclass of the stand-ins for ``torch.Generator`` and ``torch.Event``: calling the class
    builds the real object with rewritten device arguments, and ``isinstance`` / ``issubclass``
    answer for the real class."""

    def __call__(cls, *args, **kwargs):
        args, kwargs = _rewrite_arguments(args, kwargs, False)
        return cls._npusim_real(*args, **kwargs)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls._npusim_real)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, cls._npusim_real)


def _device_rewriting_class(real: type) -> type:
    stand_in = _DeviceRewritingMeta(real.__name__, (), {"_npusim_real": real, "__doc__": real.__doc__})
    stand_in.__module__ = real.__module__
    return stand_in


# ---------------------------------------------------------------------------------------------
# Module swaps


def _merge_module(target: types.ModuleType, source: types.ModuleType) -> None:
    """Give ``target`` every public name of ``source`` (its ``__all__``)."""
    for name in getattr(source, "__all__", ()):
        setattr(target, name, getattr(source, name))


def _patch_cuda_modules() -> None:
    import torch.cuda.amp
    import torch.cuda.amp.autocast_mode
    import torch.cuda.amp.common
    import torch.cuda.amp.grad_scaler
    import torch.cuda.random

    npu = torch.npu
    import npusim.npu.amp.autocast_mode
    import npusim.npu.amp.common
    import npusim.npu.amp.grad_scaler

    _merge_module(torch.cuda, npu)
    _merge_module(torch.cuda.amp, npu.amp)
    _merge_module(torch.cuda.random, npu.random)
    _merge_module(torch.cuda.amp.autocast_mode, npusim.npu.amp.autocast_mode)
    _merge_module(torch.cuda.amp.common, npusim.npu.amp.common)
    _merge_module(torch.cuda.amp.grad_scaler, npusim.npu.amp.grad_scaler)
    torch.cuda.default_generators = npu.default_generators  # type: ignore[attr-defined]
    torch.cuda._lazy_init = npu._lazy_init  # type: ignore[attr-defined]
    torch.cuda._is_in_bad_fork = npu._is_in_bad_fork  # type: ignore[attr-defined]
    _wrap_attributes(torch.cuda, CUDA_FUNCTIONS)
    # torch.cuda.device is torch.npu.device now; its constructor takes "cuda:N" too.
    _wrap_init(torch.cuda.device)


def _patch_methods() -> None:
    _wrap_attributes(torch.Tensor, TENSOR_METHODS)
    torch.Tensor.cuda = torch.Tensor.npu  # type: ignore[attr-defined]
    torch.Tensor.is_cuda = torch.Tensor.is_npu  # type: ignore[attr-defined]
    _wrap_attributes(torch.nn.Module, MODULE_METHODS)
    torch.nn.Module.cuda = torch.nn.Module.npu  # type: ignore[attr-defined]
    if hasattr(torch.TypedStorage, "is_npu"):
        torch.TypedStorage.is_cuda = torch.TypedStorage.is_npu  # type: ignore[attr-defined]


def _patch_torch_functions() -> list[str]:
    from torch.utils import _device as device_context

    # The `with torch.device(...)` mode recognizes factories by identity in a cached set; fill
    # the cache with the original functions before they are wrapped.
    device_context._device_constructors()
    wrapped = _wrap_attributes(torch, TORCH_FUNCTIONS)
    _wrap_attributes(torch.fft, ["fftfreq", "rfftfreq"])
    _wrap_init(torch.amp.autocast_mode.autocast)
    try:
        new = torch.UntypedStorage.__dict__.get("__new__")
        original = new if new is not None else torch.UntypedStorage.__new__
        if getattr(original, _WRAPPED_MARK, None) is None:
            torch.UntypedStorage.__new__ = _wrap_device_function(original)  # type: ignore[method-assign]
    except (AttributeError, TypeError):
        pass
    _wrap_init(device_context.DeviceContext)
    if not isinstance(torch.Generator, _DeviceRewritingMeta):
        torch.Generator = _device_rewriting_class(torch.Generator)  # type: ignore[misc]
    from torch import _utils as torch_utils

    torch_utils._get_available_device_type = lambda: "npu"
    return wrapped


def _rewrite_backend(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("nccl", "hccl").replace("cuda", "npu")
    return value


def _wrap_backend_function(fn: Callable) -> Callable:
    if getattr(fn, _WRAPPED_MARK, None) is not None:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = tuple(_rewrite_backend(arg) for arg in args)
        if "backend" in kwargs:
            kwargs["backend"] = _rewrite_backend(kwargs["backend"])
        return fn(*args, **kwargs)

    setattr(wrapper, _WRAPPED_MARK, fn)
    return wrapper


def _patch_distributed() -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    for owner in (dist, c10d):
        for name in ("init_process_group", "new_group", "_new_group_with_tag"):
            fn = getattr(owner, name, None)
            if fn is not None:
                setattr(owner, name, _wrap_backend_function(fn))

    def is_hccl_available() -> bool:
        return "hccl" in dist.Backend.backend_list

    dist.is_nccl_available = getattr(dist, "is_hccl_available", is_hccl_available)
    dist.Backend.default_device_backend_map.pop("cuda", None)
    _wrap_init(torch.nn.parallel.DistributedDataParallel)
    # FSDP and DeviceMesh are heavy to import (seconds): patched now if the program already
    # imported them, else right after it does.
    _patch_when_imported("torch.distributed.fsdp", _patch_fsdp)
    _patch_when_imported("torch.distributed.device_mesh", _patch_device_mesh)


def _patch_fsdp(module: types.ModuleType) -> None:
    _wrap_init(module.FullyShardedDataParallel)


def _patch_device_mesh(module: types.ModuleType) -> None:
    import torch.distributed as dist

    _wrap_init(module.DeviceMesh)
    module.init_device_mesh = _wrap_device_function(module.init_device_mesh)
    if getattr(dist, "init_device_mesh", None) is not None:
        dist.init_device_mesh = module.init_device_mesh


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after a named module has been executed (once)."""

    def __init__(self, name: str, patch: Callable[[types.ModuleType], None]):
        self.name = name
        self.patch = patch

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module
        patch = self.patch

        def exec_module(module):
            original_exec(module)
            try:
                patch(module)
            except Exception:
                pass  # a patch must never break the program's import

        spec.loader.exec_module = exec_module
        return spec


def _patch_when_imported(name: str, patch: Callable[[types.ModuleType], None]) -> None:
    module = sys.modules.get(name)
    if module is not None:
        try:
            patch(module)
        except Exception:
            pass
        return
    sys.meta_path.insert(0, _PatchAfterImport(name, patch))


# ---------------------------------------------------------------------------------------------
# The banner


def _banner(functions: list[str]) -> str:
    stars = "*" * 109
    return f"""
    {stars}
    The torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and torch.nn.Module.npu now..
    The backend in torch.distributed.init_process_group set to hccl now..
    The torch.cuda.* and torch.cuda.amp.* are replaced with torch.npu.* and torch.npu.amp.* now..
    The device parameters have been replaced with npu in the function below:
    {', '.join(functions)}
    {stars}
    """


def _warn_banner(message: str) -> None:
    # Rank 0 only in a distributed job, as in torch_npu.
    rank = os.environ.get("RANK")
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            rank = str(dist.get_rank())
    except Exception:
        pass
    if rank not in (None, "0"):
        return
    with warnings.catch_warnings():
        # ImportWarning is hidden by Python's default filters; torch_npu shows it.
        warnings.simplefilter("always", ImportWarning)
        warnings.warn(message, ImportWarning, stacklevel=3)


def is_applied() -> bool:
    """Whether :func:`apply` has run in this process."""
    return _applied


def apply() -> None:
    """Patch PyTorch so that CUDA programs run on the npu device (idempotent)."""
    global _applied
    if _applied:
        return
    if not hasattr(torch, "npu"):
        import npusim  # noqa: F401  (registers the npu device)
    _patch_cuda_modules()
    _patch_methods()
    wrapped = _patch_torch_functions()
    _patch_distributed()
    _applied = True
    functions = (
        [f"torch.{name}" for name in wrapped]
        + [f"torch.Tensor.{name}" for name in TENSOR_METHODS]
        + [f"torch.nn.Module.{name}" for name in MODULE_METHODS]
    )
    _warn_banner(_banner(functions))


def apply_from_environment() -> None:
    """Apply when ``TORCH_TRANSFER_TO_NPU=1``; raise ``ValueError`` for a value other than 0/1."""
    value = os.environ.get("TORCH_TRANSFER_TO_NPU", "0")
    if value == "1":
        apply()
    elif value != "0":
        raise ValueError(f"Invalid value for TORCH_TRANSFER_TO_NPU: {value}. Only '0' or '1' is supported.")



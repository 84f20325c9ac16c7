"""Automatic CUDA-to-NPU migration at run time: what ``from torch_npu.contrib import
transfer_to_npu`` (or ``TORCH_TRANSFER_TO_NPU=1``) does in torch_npu (contract §14).

:func:`apply` patches PyTorch in place, once per process, with torch_npu's rules:

- module swaps: ``torch.cuda`` takes the functions of ``torch.npu`` (every name of
  ``torch.npu.__all__``), ``torch.cuda.amp`` / ``random`` / ``amp.autocast_mode`` /
  ``amp.common`` / ``amp.grad_scaler`` those of their npu counterparts;
  ``torch.cuda.default_generators`` the npu generators; ``torch.cuda.CUDAGraph`` ->
  ``torch.npu.NPUGraph``, ``torch.cuda.DoubleTensor`` -> ``torch.npu.FloatTensor``, the memory
  history functions and ``torch._C._host_emptyCache`` -> their npu versions (each where npusim
  has the npu version);
- methods: ``Tensor.cuda`` / ``Tensor.is_cuda`` / ``Module.cuda`` / ``TypedStorage.is_cuda``;
- device arguments (torch_npu's ``_wrapper_cuda``): every positional string that contains
  "cuda" gets "npu" (also a file name such as ``torch.load("cuda_model.pt")``, as in
  torch_npu), ``torch.device('cuda:N')`` -> ``npu:N``, a bare int for ``to`` / ``to_empty`` ->
  ``npu:N``, the keywords ``device`` / ``device_type`` / ``map_location`` / ``device_id``
  (an int there is a device index), ``device_ids`` lists, and dictionaries (keys and values) in
  the functions of contract §14; ``torch.Generator`` and ``torch.Event`` are device-rewriting
  stand-ins (``isinstance`` answers for the real classes);
- distributed: "nccl" -> "hccl" and "cuda" -> "npu" in backend strings, ``is_nccl_available``,
  ``ProcessGroupNCCL``, no "cuda" default backend; DDP, FSDP, DeviceMesh, pipelining;
- profiler: the ``torch_npu.profiler`` classes where npusim has them,
  ``ProfilerActivity.CUDA`` -> the npu activity, a CUDA ``experimental_config`` dropped with
  torch_npu's warning;
- disabled / forced: ``torch.jit.script`` and ``script_method`` are identity functions (with
  torch_npu's ``RuntimeWarning``), ``has_triton`` answers False, Inductor's ``get_gpu_type``
  and ``torch._utils._get_available_device_type`` answer "npu";
- third-party exceptions: the functions listed in ``data/migration/transfer_apis_config.json``
  (torch_npu's ``apis_config.json``) see the original ``torch.cuda.is_available`` while they
  run, for the versions listed there;
- the banner ``ImportWarning`` (rank 0 only when distributed).

Better than torch_npu:

- a ``map_location`` dictionary keeps its original "cuda" keys next to the rewritten ones, so a
  checkpoint saved on real GPUs (storages tagged "cuda:1") honours
  ``{'cuda:1': 'npu:0'}`` (torch_npu rewrites the keys only, and such storages then land on
  npu:1);
- ``nn.DataParallel`` picks npu (its module keeps a private copy of the device-type helper, which
  torch_npu leaves on "cuda"); over more than one device it raises a clear "not supported" error
  (torch_npu has no multi-device DataParallel) instead of failing inside CUDA-only collectives.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import json
import logging
import os
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

JIT_SCRIPT_WARNING = (
    "torch.jit.script and torch.jit.script_method will be disabled by transfer_to_npu, which currently does not "
    "support them, if you need to enable them, please do not use transfer_to_npu."
)
EXPERIMENTAL_CONFIG_WARNING = (
    "The parameter experimental_config of torch.profiler.profile has been deleted by the tool because it can only "
    "be used in cuda, please manually modify the code and use the experimental_config parameter adapted to npu."
)

_WRAPPED_MARK = "__npusim_transfer_original__"


# ---------------------------------------------------------------------------------------------
# Rewriting device arguments (torch_npu's rules)


def _rewrite_device(value: Any, replace_int: bool) -> Any:
    if isinstance(value, str):
        return value.replace("cuda", "npu") if "cuda" in value else value
    if isinstance(value, torch.device):
        if "cuda" in value.type:
            return torch.device("npu", value.index) if value.index is not None else torch.device("npu")
        return value
    if replace_int and isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    if isinstance(value, dict):
        return _rewrite_dict(value)
    return value


def _rewrite_dict(mapping: dict) -> dict:
    """Keys and values rewritten as strings; an original "cuda" key stays next to its rewritten
    form, so storages tagged "cuda:N" by a real GPU save are mapped too."""
    rewritten = {}
    for key, value in mapping.items():
        if isinstance(value, str):
            value = value.replace("cuda", "npu")
        if isinstance(key, str) and "cuda" in key:
            rewritten[key] = value
            key = key.replace("cuda", "npu")
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
                kwargs[name] = _rewrite_device(value, True)
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

    def __getattr__(cls, name):
        return getattr(cls._npusim_real, name)


def _device_rewriting_class(real: type) -> type:
    stand_in = _DeviceRewritingMeta(real.__name__, (), {"_npusim_real": real, "__doc__": real.__doc__})
    stand_in.__module__ = real.__module__
    stand_in.__qualname__ = real.__qualname__
    return stand_in


# ---------------------------------------------------------------------------------------------
# Patches that wait for a module the program may never import


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
    import torch.cuda.memory
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
    # The swaps below need the npu counterpart; where npusim lacks it torch's stays.
    for cuda_name, npu_name in (("CUDAGraph", "NPUGraph"), ("DoubleTensor", "FloatTensor")):
        counterpart = getattr(npu, npu_name, None)
        if counterpart is not None:
            setattr(torch.cuda, cuda_name, counterpart)
    npu_memory = getattr(npu, "memory", None)
    for name in ("_record_memory_history", "_snapshot", "_dump_snapshot"):
        counterpart = getattr(npu_memory, name, None)
        if counterpart is not None:
            setattr(torch.cuda.memory, name, counterpart)
    # torch_npu's _C._npu_hostEmptyCache; npusim's pinned host cache is emptied by
    # torch.npu.host_empty_cache.
    npu_host_empty_cache = getattr(_npusim_c(), "_npu_hostEmptyCache", None) or getattr(npu, "host_empty_cache", None)
    if npu_host_empty_cache is not None:
        torch._C._host_emptyCache = npu_host_empty_cache  # type: ignore[attr-defined]
    _wrap_attributes(torch.cuda, CUDA_FUNCTIONS)
    # torch.cuda.device is torch.npu.device now; its constructor takes "cuda:N" too.
    _wrap_init(torch.cuda.device)


def _npusim_c() -> Any:
    try:
        from npusim import _C

        return _C
    except ImportError:
        return None


def _patch_methods() -> None:
    _wrap_attributes(torch.Tensor, TENSOR_METHODS)
    torch.Tensor.cuda = torch.Tensor.npu  # type: ignore[attr-defined]
    torch.Tensor.is_cuda = torch.Tensor.is_npu  # type: ignore[attr-defined]
    _wrap_attributes(torch.nn.Module, MODULE_METHODS)
    torch.nn.Module.cuda = torch.nn.Module.npu  # type: ignore[attr-defined]
    if hasattr(torch.TypedStorage, "is_npu"):
        torch.TypedStorage.is_cuda = torch.TypedStorage.is_npu  # type: ignore[attr-defined]
    # Lazy modules (nn.LazyLinear) accept only the methods of this list before their first
    # call; it holds the original Tensor.to, which is no longer the one programs reach.
    from torch.nn.parameter import UninitializedTensorMixin

    allowed = UninitializedTensorMixin._allowed_methods
    for index, method in enumerate(allowed):
        if getattr(method, "__name__", "") == "to":
            allowed[index] = torch.Tensor.to
            break


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
    for name in ("Generator", "Event"):
        real = getattr(torch, name, None)
        if real is not None and not isinstance(real, _DeviceRewritingMeta):
            setattr(torch, name, _device_rewriting_class(real))
    from torch import _utils as torch_utils

    torch_utils._get_available_device_type = _available_device_type
    _patch_when_imported("torch.utils.cpp_extension", _patch_cpp_extension)
    return wrapped


def _available_device_type() -> str:
    return "npu"


def _patch_cpp_extension(module: types.ModuleType) -> None:
    module.include_paths = _wrap_device_function(module.include_paths)


# ---------------------------------------------------------------------------------------------
# nn.DataParallel


def _patch_data_parallel() -> None:
    from npusim import _data_parallel

    # The module imported its own reference to the helper before it was patched, so it still
    # answers "cuda" (torch.cuda.is_available() is True now); single-device runs and the clear
    # multi-device error come from npusim._data_parallel (installed when npusim loads).
    _data_parallel.install()
    importlib.import_module("torch.nn.parallel.data_parallel")._get_available_device_type = _available_device_type


# ---------------------------------------------------------------------------------------------
# Distributed


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
    hccl_group = getattr(dist, "ProcessGroupHCCL", None)
    if hccl_group is not None:
        dist.ProcessGroupNCCL = hccl_group
    dist.Backend.default_device_backend_map.pop("cuda", None)
    _wrap_init(torch.nn.parallel.DistributedDataParallel)
    # FSDP, DeviceMesh and pipelining are heavy to import (seconds): patched now if the program
    # already imported them, else right after it does.
    _patch_when_imported("torch.distributed.fsdp", _patch_fsdp)
    _patch_when_imported("torch.distributed.device_mesh", _patch_device_mesh)
    _patch_when_imported("torch.distributed.pipelining", _patch_pipelining)


def _patch_fsdp(module: types.ModuleType) -> None:
    _wrap_init(module.FullyShardedDataParallel)


def _patch_device_mesh(module: types.ModuleType) -> None:
    import torch.distributed as dist

    _wrap_init(module.DeviceMesh)
    module.init_device_mesh = _wrap_device_function(module.init_device_mesh)
    if getattr(dist, "init_device_mesh", None) is not None:
        dist.init_device_mesh = module.init_device_mesh


def _patch_pipelining(module: types.ModuleType) -> None:
    _wrap_init(module.PipelineStage)
    module.build_stage = _wrap_device_function(module.build_stage)


# ---------------------------------------------------------------------------------------------
# Profiler


def _patch_profiler() -> None:
    import torch.profiler

    try:
        # torch_npu.profiler is this very module (npusim/_torch_npu_compat/profiler re-exports it).
        npu_profiler = importlib.import_module("npusim.profiler")
    except Exception:  # npusim without its profiler (csrc/profiler): torch's stays
        npu_profiler = None
    if npu_profiler is not None:
        for name in ("profile", "schedule", "tensorboard_trace_handler", "ProfilerAction"):
            counterpart = getattr(npu_profiler, name, None)
            if counterpart is not None:
                setattr(torch.profiler, name, counterpart)
    activity = torch.profiler.ProfilerActivity
    npu_activity = getattr(getattr(npu_profiler, "ProfilerActivity", None), "NPU", None)
    try:
        activity.CUDA = npu_activity if npu_activity is not None else activity.PrivateUse1
    except (AttributeError, TypeError):
        pass
    profile = torch.profiler.profile
    if getattr(profile, _WRAPPED_MARK, None) is not None:
        return
    npu_config = getattr(npu_profiler, "_ExperimentalConfig", None)

    @functools.wraps(profile, updated=())
    def profile_without_cuda_config(*args, **kwargs):
        config = kwargs.get("experimental_config")
        if "experimental_config" in kwargs and not (npu_config is not None and isinstance(config, npu_config)):
            logging.warning(EXPERIMENTAL_CONFIG_WARNING)
            del kwargs["experimental_config"]
        return profile(*args, **kwargs)

    setattr(profile_without_cuda_config, _WRAPPED_MARK, profile)
    torch.profiler.profile = profile_without_cuda_config


# ---------------------------------------------------------------------------------------------
# Disabled and forced features


def _jit_script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


def _jit_script_method(fn):
    return fn


def _patch_jit_and_compilers() -> None:
    warnings.warn(JIT_SCRIPT_WARNING, RuntimeWarning, stacklevel=4)
    torch.jit.script = _jit_script
    torch.jit.script_method = _jit_script_method
    import torch.utils._triton as triton_utils

    triton_utils.has_triton = _no_triton
    _patch_when_imported("torch._inductor.utils", _patch_inductor_utils)


def _no_triton() -> bool:
    return False


def _patch_inductor_utils(module: types.ModuleType) -> None:
    module.get_gpu_type = _available_device_type


# ---------------------------------------------------------------------------------------------
# Third-party libraries that must see the real torch.cuda.is_available


_REAL_IS_AVAILABLE = torch.cuda.is_available
THIRD_PARTY_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "migration", "transfer_apis_config.json")


def _with_real_cuda_availability(fn: Callable) -> Callable:
    if getattr(fn, _WRAPPED_MARK, None) is not None:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        patched = torch.cuda.is_available
        torch.cuda.is_available = _REAL_IS_AVAILABLE
        try:
            return fn(*args, **kwargs)
        finally:
            torch.cuda.is_available = patched

    setattr(wrapper, _WRAPPED_MARK, fn)
    return wrapper


def _version_at_least(current: str, minimum: str) -> bool:
    def key(text: str) -> tuple:
        parts = []
        for part in text.split("+")[0].split("."):
            digits = "".join(ch for ch in part if ch.isdigit())
            parts.append(int(digits) if digits else 0)
        return tuple(parts)

    try:
        from packaging.version import Version

        return Version(current) >= Version(minimum)
    except Exception:
        return key(current) >= key(minimum)


def _third_party_targets(config: dict) -> list[tuple[str, str, str | None]]:
    """(module, attribute, class or None) for each API of an installed package whose version is
    at least the listed one."""
    targets = []
    for package, entry in config.items():
        if not isinstance(entry, dict):
            continue
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
        minimum, apis = entry.get("version"), entry.get("apis")
        if not minimum or not isinstance(apis, dict) or not _version_at_least(installed, minimum):
            continue
        for full_name, kind in apis.items():
            parts = full_name.split(".")
            if kind == "method" and len(parts) >= 3:
                targets.append((".".join(parts[:-2]), parts[-1], parts[-2]))
            elif kind == "function" and len(parts) >= 2:
                targets.append((".".join(parts[:-1]), parts[-1], None))
    return targets


def _patch_third_party(config_path: str = THIRD_PARTY_CONFIG) -> None:
    try:
        with open(config_path, encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, ValueError):
        return
    if not isinstance(config, dict):
        return
    by_module: dict[str, list[tuple[str, str | None]]] = {}
    for module_name, attribute, class_name in _third_party_targets(config):
        by_module.setdefault(module_name, []).append((attribute, class_name))
    for module_name, entries in by_module.items():

        def patch(module: types.ModuleType, entries=entries) -> None:
            for attribute, class_name in entries:
                owner = getattr(module, class_name, None) if class_name else module
                fn = getattr(owner, attribute, None) if owner is not None else None
                if fn is not None:
                    setattr(owner, attribute, _with_real_cuda_availability(fn))

        # The libraries are imported by the program when it needs them, not here (importing
        # transformers takes seconds).
        _patch_when_imported(module_name, patch)


# ---------------------------------------------------------------------------------------------
# The banner


def _banner(functions: list[str]) -> str:
    stars = "*" * 109
    return f"""
    {stars}
    The torch.Tensor.cuda and torch.nn.Module.cuda are replaced with torch.Tensor.npu and torch.nn.Module.npu now..
    The torch.cuda.DoubleTensor is replaced with torch.npu.FloatTensor cause the double type is not supported now..
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
    _applied = True
    functions = (
        [f"torch.{name}" for name in TORCH_FUNCTIONS]
        + [f"torch.Tensor.{name}" for name in TENSOR_METHODS]
        + [f"torch.nn.Module.{name}" for name in MODULE_METHODS]
    )
    _warn_banner(_banner(functions))
    _patch_cuda_modules()
    _patch_profiler()
    _patch_torch_functions()
    _patch_methods()
    _patch_distributed()
    _patch_data_parallel()
    _patch_jit_and_compilers()
    _patch_third_party()


def apply_from_environment() -> None:
    """Apply when ``TORCH_TRANSFER_TO_NPU=1``; raise ``ValueError`` for a value other than 0/1."""
    value = os.environ.get("TORCH_TRANSFER_TO_NPU", "0")
    if value == "1":
        apply()
    elif value != "0":
        raise ValueError(f"Invalid value for TORCH_TRANSFER_TO_NPU: {value}. Only '0' or '1' is supported.")

"""npusim: a software-simulated Ascend NPU for PyTorch.

npusim registers a simulated Huawei Ascend NPU as PyTorch's ``npu`` device (the PrivateUse1
backend, the way torch_npu does it). Operators run with real numerics on the host CPU, while a
model of the chip (910B2 by default) accounts device memory and simulated time.

How it plugs in
---------------
- ``import torch`` loads npusim through PyTorch's ``torch.backends`` entry point
  (:func:`_autoload`); ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off, and ``import npusim``
  then loads it explicitly. Loading is cheap: the runtime and its devices initialize lazily,
  on the first call that needs them.
- Loading renames PrivateUse1 to ``npu``, registers :mod:`npusim.npu` as ``torch.npu``,
  generates ``Tensor.npu()`` / ``Tensor.is_npu`` / ``Module.npu()`` and the storage methods
  (quantized dtypes refused), and aliases ``ProfilerActivity.NPU``.
- torch_npu compatibility: ``import torch_npu`` is served from ``npusim/_torch_npu_compat/``
  in any order, also as a program's first line before torch (it imports torch, as the real one
  does): a light finder (``_npusim_torch_npu_hook``, run at start-up by ``npusim-torch_npu.pth``
  when pip-installed, by the small ``python/torch_npu`` package in a source checkout) finds it
  without importing torch, and once npusim loads, :mod:`npusim._compat_finder` (at the front of
  ``sys.meta_path``) also makes ``torch_npu.npu`` the very ``torch.npu`` module.
  ``torch_npu.contrib.transfer_to_npu`` patches CUDA code to run on ``npu``
  (:mod:`npusim._transfer_to_npu`; also ``TORCH_TRANSFER_TO_NPU=1``).
- npusim never runs next to a real torch_npu: if the distribution ``torch-npu`` (or a
  ``torch_npu`` package on ``sys.path``) is installed, importing npusim raises ImportError
  and npusim stays off. As torch_npu does, npusim also refuses to load into a PyTorch
  built for another accelerator (CUDA, ROCm, XPU, ...).
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "npu",
    "estimate",
    "is_estimate_only",
    "placement_report",
    "reset_placement_report",
    "performance_report",
    "reset_performance_report",
    "step",
]

_REGISTERED = False


# ---------------------------------------------------------------------------------------------
# Refusing to run next to a real torch_npu


def _real_torch_npu() -> str | None:
    """A description of a real torch_npu visible to this interpreter, or None (npusim's own
    ``torch_npu``, served from ``_torch_npu_compat`` or the in-tree shim, does not count)."""
    try:
        import _npusim_torch_npu_hook
    except ImportError:
        # npusim copied without the start-up hook that sits next to it: the distribution tells.
        import importlib.metadata

        try:
            dist = importlib.metadata.distribution("torch-npu")
        except importlib.metadata.PackageNotFoundError:
            return None
        return None if "npusim" in (dist.version or "") else f"torch-npu {dist.version}"
    return _npusim_torch_npu_hook.real_torch_npu()


def _refuse_next_to_torch_npu() -> None:
    found = _real_torch_npu()
    if found is None:
        return
    raise ImportError(
        f"npusim cannot run next to a real torch_npu: {found} is installed in this environment, "
        "and both would register the 'npu' device. npusim stays off. Choose one: uninstall "
        "torch-npu (`pip uninstall torch-npu`) to use the simulated NPU, or uninstall npusim "
        "(`pip uninstall npusim`) to use the real one. To keep both installed, set "
        "TORCH_DEVICE_BACKEND_AUTOLOAD=0 so that `import torch` loads neither, and import the "
        "real one with `import torch_npu`."
    )


def _check_device_conflict() -> None:
    """The accelerator check of torch_npu (contract §2), with the same text."""
    import torch

    from npusim._error_code import ErrCode, pta_error

    accelerator = torch._C._get_accelerator()
    name = accelerator.type if hasattr(accelerator, "type") else str(accelerator)
    if name not in ("cpu", "npu", "privateuseone"):
        raise RuntimeError(
            f"Two accelerators cannot be used at the same time in PyTorch: npu and {name}. "
            "You can install the cpu version of PyTorch to use your npu device, or use the "
            f"{name} device with 'export TORCH_DEVICE_BACKEND_AUTOLOAD=0'." + pta_error(ErrCode.NOT_SUPPORT)
        )


# ---------------------------------------------------------------------------------------------
# Registration


def _register_backend() -> None:
    import torch
    import torch.utils.backend_registration as backend_registration

    from npusim import _C  # loads the C++ backend: guard, hooks, allocator, kernels
    from npusim import _ops

    _ops.load()  # torch.ops.npu: torch_npu's own operators (csrc/ops)
    from npusim import _profiler_lib

    _profiler_lib.load()  # the npu device in torch.profiler (csrc/profiler)
    from npusim._error_code import is_interactive_session

    # The C++ errors leave out the error-code suffix in an interactive session, as torch_npu's.
    _C._set_interactive(is_interactive_session())
    # Frames under these directories are library code: the placement report names the first
    # frame outside them as the user's source line.
    # npusim_tools (the console scripts' launcher) is npusim's too.
    library_paths = [os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep,
                     os.path.join(os.path.dirname(os.path.dirname(__file__)), "npusim_tools") + os.sep]
    _C._set_library_paths(library_paths)
    from npusim import _sync_labels

    _sync_labels.set_library_prefixes(library_paths)

    if backend_registration._privateuse1_backend_name != "npu":
        # Also aliases ProfilerActivity.NPU and DeviceType.NPU.
        torch.utils.rename_privateuse1_backend("npu")

    import npusim.npu as npu_module

    if not hasattr(torch, "npu"):
        torch._register_device_module("npu", npu_module)

    if not hasattr(torch.Tensor, "is_npu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True,
            for_module=True,
            for_storage=True,
            unsupported_dtype=[torch.quint8, torch.quint4x2, torch.quint2x4, torch.qint32, torch.qint8],
        )

    if getattr(torch.version, "cann", None) is None:
        # As torch_npu does on import (accelerate, vLLM and others read it).
        from npusim.npu.versions import installed_cann_version

        torch.version.cann = installed_cann_version()

    from npusim import _serialization

    _serialization._install()  # the legacy torch.save as torch_npu wraps it
    from npusim.npu import formats as _formats

    _formats._install_storage_deepcopy()  # copy.deepcopy keeps the npu storage format

    from torch._C._profiler import ProfilerActivity

    if not hasattr(ProfilerActivity, "NPU"):
        ProfilerActivity.NPU = ProfilerActivity.PrivateUse1


def _load() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    _refuse_next_to_torch_npu()
    _check_device_conflict()
    _register_backend()
    # The features, each registering itself with the layers below (torch.npu, torch.distributed,
    # Dynamo's import hooks); nothing below imports them.
    from npusim.npu import amp  # noqa: F401  (torch.npu.amp: a subpackage joins torch.npu as it loads)
    from npusim import _compat_finder

    _compat_finder.install()
    from npusim import distributed

    distributed.register()
    from npusim import compile as _compile

    _compile.install()  # torch.compile on npu (lazy: nothing of Dynamo is imported here)
    from npusim import compare as _compare

    _compare.install()  # `import msprobe` served where no real msprobe is installed
    _REGISTERED = True


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group, run by ``import torch``.

    Importing npusim already did the work (registration, ``TORCH_TRANSFER_TO_NPU``); PyTorch's
    loader imports the module before it calls this.
    """
    _load()


_load()

from npusim import npu  # noqa: E402  (torch.npu)
from npusim.estimate import estimate, is_estimate_only  # noqa: E402
from npusim.performance import performance_report, reset_performance_report, step  # noqa: E402
from npusim.placement import placement_report, reset_placement_report  # noqa: E402
from npusim import _data_parallel  # noqa: E402

_data_parallel.install()

if os.environ.get("TORCH_TRANSFER_TO_NPU", "0") != "0":
    # Imported only when asked for (it validates the value: anything but 0 or 1 raises); this
    # runs at `import torch`, and most programs do not set the variable.
    from npusim import _transfer_to_npu

    _transfer_to_npu.apply_from_environment()

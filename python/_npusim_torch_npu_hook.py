"""Makes ``import torch_npu`` work before ``import torch`` (npusim's light import hook).

Real torch_npu is an ordinary package: ``importlib.util.find_spec("torch_npu")`` finds it
before torch is imported (transformers' ``is_torch_npu_available()`` and accelerate ask exactly
that), and ``import torch_npu`` as a program's first line imports torch itself. npusim serves
``torch_npu`` from ``npusim/_torch_npu_compat/``; this module lets Python find it at any time:

- installed with pip, npusim puts ``npusim-torch_npu.pth`` in site-packages; its one line runs
  :func:`install` at interpreter start. This module imports nothing heavy (no torch, no
  npusim), so ``import torch`` and Python's start stay as fast as before;
- in a source checkout (``PYTHONPATH=python``), where no ``.pth`` file is read, the small
  package ``python/torch_npu`` does the same when it is imported (:func:`load_into`).

The finder steps aside when a real torch_npu is installed: npusim never runs next to one.

The same start-up also serves ``import msprobe`` (MindStudio Probe's ``PrecisionDebugger``, from
``npusim/compare/_msprobe``) where no real msprobe is installed: :class:`MsprobeBootstrapFinder`
sits last on ``sys.meta_path``, after every finder that could find a real one.
"""

import importlib.machinery  # loaded by Python's start-up already
import os
import sys

__all__ = ["install", "compat_directory", "real_torch_npu", "is_npusim_shim", "load_into", "MsprobeBootstrapFinder"]

SHIM_MARKER = "npusim in-tree torch_npu shim"


def _npusim_directory() -> str | None:
    """The folder of the npusim package Python would import, found without importing it."""
    module = sys.modules.get("npusim")
    if module is not None and getattr(module, "__file__", None):
        return os.path.dirname(os.path.abspath(module.__file__))
    spec = importlib.machinery.PathFinder.find_spec("npusim")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def compat_directory() -> str | None:
    """The folder whose ``__init__.py`` npusim serves as ``torch_npu``."""
    npusim_directory = _npusim_directory()
    if npusim_directory is None:
        return None
    folder = os.path.join(npusim_directory, "_torch_npu_compat")
    return folder if os.path.isfile(os.path.join(folder, "__init__.py")) else None


def is_npusim_shim(path: str | None) -> bool:
    """Whether ``path`` (a package ``__init__.py`` or its folder) is npusim's own torch_npu."""
    if not path:
        return False
    if os.path.isdir(path):
        path = os.path.join(path, "__init__.py")
    compat = compat_directory()
    if compat is not None and os.path.abspath(path).startswith(compat + os.sep):
        return True
    try:
        with open(path, encoding="utf-8") as handle:
            return SHIM_MARKER in handle.read(512)
    except OSError:
        return False


def _is_npusim_distribution(dist) -> bool:
    """Whether a distribution named torch-npu is npusim's own alias (and not the real one)."""
    if "npusim" in (dist.version or ""):
        return True
    if "npusim" in (dist.metadata.get("Summary") or "").lower():
        return True
    return any(
        requirement.split(";")[0].strip().lower().startswith("npusim") for requirement in dist.requires or []
    )


def real_torch_npu() -> str | None:
    """A description of a real torch_npu visible to this interpreter, or None."""
    loaded = sys.modules.get("torch_npu")
    if loaded is not None and not getattr(loaded, "_npusim_served", False):
        origin = getattr(loaded, "__file__", None)
        if not is_npusim_shim(origin):
            return f"torch_npu (already imported from {origin or '?'})"
    import importlib.metadata  # only here: it is slow to import, and rarely needed

    try:
        dist = importlib.metadata.distribution("torch-npu")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None and not _is_npusim_distribution(dist):
        return f"torch-npu {dist.version}"
    spec = importlib.machinery.PathFinder.find_spec("torch_npu")
    if spec is not None and dist is None:
        location = spec.origin or (list(spec.submodule_search_locations or []) or [None])[0]
        if not is_npusim_shim(location):
            return f"torch_npu (package at {location or '?'})"
    return None


def compat_spec(name: str = "torch_npu"):
    """The module spec of npusim's torch_npu, or None when it cannot be served here."""
    import importlib.util  # not at start-up: it imports contextlib and functools

    compat = compat_directory()
    if compat is None:
        return None
    return importlib.util.spec_from_file_location(
        name, os.path.join(compat, "__init__.py"), submodule_search_locations=[compat]
    )


class TorchNpuBootstrapFinder:
    """Finds ``torch_npu`` (the top-level name only) in npusim when no real one is installed.

    A meta path finder by protocol (``find_spec``); it does not derive from
    ``importlib.abc.MetaPathFinder``, whose module would import ``importlib.resources`` and
    cost every interpreter start ~15 ms."""

    _npusim_bootstrap_finder = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch_npu" or path is not None:
            return None
        if real_torch_npu() is not None:
            return None  # the real package is found by the other finders; npusim stays off
        return compat_spec()


class MsprobeBootstrapFinder:
    """Finds ``msprobe`` in npusim (``npusim/compare/_msprobe``). It goes last on
    ``sys.meta_path``: a real msprobe anywhere on ``sys.path`` is found first."""

    _npusim_msprobe_finder = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "msprobe" or path is not None:
            return None
        npusim_directory = _npusim_directory()
        if npusim_directory is None:
            return None
        folder = os.path.join(npusim_directory, "compare", "_msprobe")
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            return None
        import importlib.util  # not at start-up: it imports contextlib and functools

        return importlib.util.spec_from_file_location(
            "msprobe", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )


def install() -> None:
    """Put the finders on ``sys.meta_path`` (once); run by the ``.pth`` file at start-up."""
    if not any(getattr(finder, "_npusim_msprobe_finder", False) for finder in sys.meta_path):
        sys.meta_path.append(MsprobeBootstrapFinder())
    if any(getattr(finder, "_npusim_bootstrap_finder", False) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, TorchNpuBootstrapFinder())


def load_into(namespace: dict) -> None:
    """Turn the module whose globals are ``namespace`` into npusim's torch_npu.

    The in-tree shim calls this: its folder becomes the compat folder (so that
    ``torch_npu.contrib``, ``torch_npu.utils``, ... are found there) and the compat package's
    ``__init__`` runs in the shim's namespace, which keeps one module object.
    """
    compat = compat_directory()
    if compat is None:
        raise ImportError("npusim's torch_npu needs the npusim package next to it, which was not found")
    init = os.path.join(compat, "__init__.py")
    namespace["__file__"] = init
    namespace["__path__"] = [compat]
    spec = namespace.get("__spec__")
    if spec is not None:
        spec.submodule_search_locations = [compat]
        spec.origin = init
    with open(init, encoding="utf-8") as handle:
        code = compile(handle.read(), init, "exec")
    exec(code, namespace)  # noqa: S102  (npusim's own source)

"""The import hook that serves ``torch_npu`` from npusim.

npusim installs :class:`TorchNpuFinder` at the front of ``sys.meta_path`` when it loads and no
real torch_npu is installed (npusim refuses to load next to one). The finder answers:

- ``torch_npu``: the package in ``npusim/_torch_npu_compat/`` loaded under the name
  ``torch_npu`` (its submodules, e.g. ``torch_npu.contrib.transfer_to_npu``, are then found by
  Python's normal path search in that folder);
- ``torch_npu.npu`` and ``torch_npu.npu.<x>``: the very module objects ``npusim.npu`` /
  ``npusim.npu.<x>``, so ``torch_npu.npu is torch.npu``.

Everything else is left to the other finders.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["TorchNpuFinder", "install", "COMPAT_DIRECTORY"]

COMPAT_DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_npu_compat")
_PACKAGE = "torch_npu"
_NPU_ALIAS = "torch_npu.npu"


class _AliasLoader(importlib.abc.Loader):
    """Loads a module name as an alias of an existing npusim module (the same object)."""

    def __init__(self, target: str):
        self.target = target
        self._original_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._original_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # Already executed under its own name. The import system has just set the alias spec
        # on it; the module keeps its own.
        if self._original_spec is not None:
            module.__spec__ = self._original_spec


class TorchNpuFinder(importlib.abc.MetaPathFinder):
    """Serves ``torch_npu`` and ``torch_npu.npu*`` from npusim (see the module docstring)."""

    _npusim_torch_npu_finder = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _PACKAGE:
            return importlib.util.spec_from_file_location(
                _PACKAGE,
                os.path.join(COMPAT_DIRECTORY, "__init__.py"),
                submodule_search_locations=[COMPAT_DIRECTORY],
            )
        if fullname == _NPU_ALIAS or fullname.startswith(_NPU_ALIAS + "."):
            target_name = "npusim.npu" + fullname[len(_NPU_ALIAS):]
            if target_name in sys.modules or importlib.util.find_spec(target_name) is not None:
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name))
        return None


def install() -> None:
    """Put the finder at the front of ``sys.meta_path`` (once)."""
    for finder in sys.meta_path:
        if getattr(finder, "_npusim_torch_npu_finder", False):
            return
    sys.meta_path.insert(0, TorchNpuFinder())

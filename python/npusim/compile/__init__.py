"""Graph mode on npu: Dynamo's device interface, Inductor's npu backend, compile reports.

Nothing here is imported by ``import torch``: Dynamo's interface is registered when Dynamo
loads its device registry (an import hook on ``torch._dynamo.device_interface``), and the
Inductor backend when Inductor first asks the npu device module for its code generators
(``torch.npu.Scheduling``, PyTorch's lookup for a PrivateUse1 backend), so a program that never
compiles pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"


class _RegisterAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs an npu registration right after a module (by default
    ``torch._dynamo.device_interface``) executes."""

    def __init__(self, module: str = _DEVICE_INTERFACE_MODULE, register=None) -> None:
        self._resolving = False
        self._module = module
        self._register = register

    def find_spec(self, fullname, path, target=None):
        if fullname != self._module or self._resolving:
            return None
        self._resolving = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving = False
        if spec is None or spec.loader is None:
            return None
        self._wrapped = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module):
        self._wrapped.exec_module(module)
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        if self._register is not None:
            self._register()
            return
        from npusim.compile import device_interface

        device_interface.register()


def after_import(module: str, register) -> None:
    """Run ``register`` now if ``module`` is loaded, else right after it loads."""
    loaded = sys.modules.get(module)
    if loaded is not None and not getattr(getattr(loaded, "__spec__", None), "_initializing", False):
        register()
        return
    sys.meta_path.insert(0, _RegisterAfterImport(module, register))


def install() -> None:
    """Arrange the Dynamo registration (now if Dynamo is loaded, else when it loads), and
    serve ``torchair`` where no real one is installed."""
    install_torchair()
    if _DEVICE_INTERFACE_MODULE in sys.modules:
        from npusim.compile import device_interface

        device_interface.register()
        return
    if not any(isinstance(finder, _RegisterAfterImport) and finder._module == _DEVICE_INTERFACE_MODULE
               for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())


def inductor_codegen(name: str):
    """``torch.npu.Scheduling`` / ``PythonWrapperCodegen`` / ``CppWrapperCodegen`` /
    ``WrapperFxCodegen``: registers the npu Inductor backend on first use."""
    from npusim.compile import device_interface, inductor_backend

    device_interface.register()
    inductor_backend.register()
    return inductor_backend.codegen_class(name)


class _TorchairFinder(importlib.abc.MetaPathFinder):
    """Serves ``torchair`` from npusim; placed last on ``sys.meta_path`` so that a real
    torchair on ``sys.path`` is always found first."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torchair":
            return None
        import os

        directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torchair")
        return importlib.util.spec_from_file_location(
            "torchair", os.path.join(directory, "__init__.py"), submodule_search_locations=[directory]
        )


def install_torchair() -> None:
    if not any(isinstance(finder, _TorchairFinder) for finder in sys.meta_path):
        sys.meta_path.append(_TorchairFinder())

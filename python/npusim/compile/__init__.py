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

import npusim.npu as _npu
from npusim.compile._import_hooks import after_import, fully_loaded as _fully_loaded

_DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"
_DYNAMO_PACKAGE = "torch._dynamo"

# What torch.npu serves from here on first use: Inductor looks up a PrivateUse1 device's code
# generators on its device module, and torch_npu's graph API is part of torch.npu's __all__
# (contract §4, Graphs).
_INDUCTOR_CODEGEN_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")
_GRAPH_NAMES = ("NPUGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing")


def _register_device_interface() -> None:
    from npusim.compile import device_interface

    device_interface.register()


def _apply_dynamo_rules() -> None:
    from npusim.compile import dynamo_rules

    dynamo_rules.apply()


def _graph_attribute(name: str):
    from npusim.compile import graphs

    return getattr(graphs, name)


def install() -> None:
    """Serve the code generators and the graph API on ``torch.npu``, arrange the Dynamo
    registrations (now for what Dynamo has loaded, else when it loads), and serve ``torchair``
    where no real one is installed."""
    _npu._serve_attributes(_INDUCTOR_CODEGEN_NAMES, inductor_codegen)
    _npu._serve_attributes(_GRAPH_NAMES, _graph_attribute, public=True)
    install_torchair()
    if _DEVICE_INTERFACE_MODULE in sys.modules:
        _register_device_interface()
    else:
        after_import(_DEVICE_INTERFACE_MODULE, _register_device_interface)
    if _DYNAMO_PACKAGE in sys.modules:
        if _fully_loaded(_DYNAMO_PACKAGE):
            _apply_dynamo_rules()
    else:
        after_import(_DYNAMO_PACKAGE, _apply_dynamo_rules)


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

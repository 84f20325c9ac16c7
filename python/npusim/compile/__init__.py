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

_DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"
_DYNAMO_PACKAGE = "torch._dynamo"
_BACKEND_REGISTRY_MODULE = "torch._dynamo.backends.registry"

# What torch.npu serves from here on first use: Inductor looks up a PrivateUse1 device's code
# generators on its device module, and torch_npu's graph API is part of torch.npu's __all__
# (contract §4, Graphs).
_INDUCTOR_CODEGEN_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")
_GRAPH_NAMES = ("NPUGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing")


_registering_device_interface = False


def _register_device_interface() -> None:
    global _registering_device_interface
    if _registering_device_interface:
        # Importing the interface loads Dynamo, whose device registry fires this hook again
        # while the interface module is still executing; the outer call registers it.
        return
    _registering_device_interface = True
    try:
        # Dynamo first, whole: the interface module builds on it, and Dynamo's own loading runs
        # the registrations waiting for it (the tracing rules read the interface).
        import torch._dynamo  # noqa: F401

        from npusim.compile import device_interface, npu_graph_trees

        device_interface.register()
    finally:
        _registering_device_interface = False
    # reduce-overhead on npu: Inductor's graph wrapping, once Inductor's compile path has loaded
    # (Dynamo loads its device registry from inside Inductor's own imports).
    after_import("torch._inductor.compile_fx", npu_graph_trees.install)


def _register_dynamo_backends() -> None:
    """torch_npu's backend names: "npu" (TorchAir's default), "npugraphs" (NPUGraph capture
    of the AOT graphs, as "cudagraphs") and "npugraph_ex" (TorchAir's light graph mode)."""
    from npusim.compile import dynamo_backend, npugraph_ex_backend, npugraphs_backend

    dynamo_backend.register()
    npugraphs_backend.register()
    npugraph_ex_backend.register()


def _apply_dynamo_rules() -> None:
    from npusim.compile import dynamo_rules

    dynamo_rules.apply()


# Registrations that wait for a module to finish executing, by module name. install() puts the
# device interface here (Dynamo's start-up may ask it as soon as its registry exists) and the
# tracing rules of torch.npu (once the whole torch._dynamo package, its rule tables and variable
# trackers, has loaded); other parts add theirs with after_import().
_PENDING: dict[str, list] = {}


class _RegisterAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs the registrations of ``_PENDING`` right after their module executes."""

    def __init__(self) -> None:
        self._resolving = False
        self._wrapped: dict[str, importlib.abc.Loader] = {}

    def find_spec(self, fullname, path, target=None):
        if fullname not in _PENDING or self._resolving:
            return None
        self._resolving = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving = False
        if spec is None or spec.loader is None:
            return None
        self._wrapped[fullname] = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._wrapped[spec.name].create_module(spec)

    def exec_module(self, module):
        name = module.__spec__.name
        self._wrapped.pop(name).exec_module(module)
        registrations = _PENDING.pop(name, [])
        if not _PENDING:
            sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        for register in registrations:
            register()


def _fully_loaded(module: str) -> bool:
    loaded = sys.modules.get(module)
    return loaded is not None and getattr(getattr(loaded, "__spec__", None), "_initializing", False) is False


def after_import(module: str, register) -> None:
    """Run ``register`` now if ``module`` is loaded, else right after it loads (once)."""
    if _fully_loaded(module):
        register()
        return
    waiting = _PENDING.setdefault(module, [])
    if register not in waiting:
        waiting.append(register)
    if not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())


def _npugraph_ex_module(name: str):
    """``torch.npu.npugraph_ex``: the npugraph_ex package (compile_fx, register_replacement)."""
    return importlib.import_module("npugraph_ex")


def _graph_attribute(name: str):
    from npusim.compile import graphs

    return getattr(graphs, name)


# torch.npu's host functions of a stream (torch_npu's private names), from host_functions.
_HOST_FUNCTION_NAMES = {
    "_launch_host_func": "launch_host_func",
    "_launch_host_func_pending": "launch_host_func_pending",
    "_subscribe_report": "subscribe_report",
    "_unsubscribe_report": "unsubscribe_report",
}


_SUPER_KERNEL_NAMES = ("super_kernel_scope_begin", "super_kernel_scope_end")

# torch.npu's task groups, external events and graph operator handlers (NPUGraph updates).
_GRAPH_UPDATE_NAMES = (
    "ExternalEvent",
    "graph_task_group_begin",
    "graph_task_group_end",
    "graph_task_update_begin",
    "graph_task_update_end",
    "NpuGraphOpHandler",
    "register_npu_graph_handler",
)


def _graph_update_attribute(name: str):
    if name.startswith("graph_task"):
        from npusim.compile.graph_updates import task_groups as module
    elif name == "ExternalEvent":
        from npusim.compile.graph_updates import external_event as module
    else:
        from npusim.compile.graph_updates import op_handlers_builtin  # noqa: F401  (the built-in handlers)
        from npusim.compile.graph_updates import op_handlers as module
    return getattr(module, name)


def _super_kernel_attribute(name: str):
    from npusim.compile import super_kernel

    return getattr(super_kernel, name)


def _host_function_attribute(name: str):
    from npusim.compile import host_functions

    return getattr(host_functions, _HOST_FUNCTION_NAMES[name])


def install() -> None:
    """Serve the code generators and the graph API on ``torch.npu``, arrange the Dynamo
    registrations (now for what Dynamo has loaded, else when it loads), and serve ``torchair``
    where no real one is installed."""
    _npu._serve_attributes(_INDUCTOR_CODEGEN_NAMES, inductor_codegen)
    _npu._serve_attributes(_GRAPH_NAMES, _graph_attribute, public=True)
    _npu._serve_attributes(("npugraph_ex",), _npugraph_ex_module)
    _npu._serve_attributes(_HOST_FUNCTION_NAMES, _host_function_attribute)
    _npu._serve_attributes(_SUPER_KERNEL_NAMES, _super_kernel_attribute, public=True)
    _npu._serve_attributes(_GRAPH_UPDATE_NAMES, _graph_update_attribute, public=True)
    install_torchair()
    from npusim.compile import graph_steps

    graph_steps.install()  # torch.compiler.npugraph_mark_step_begin, as torch_npu installs it
    # backend="npu" and "npugraphs", as torch_npu registers them, once Dynamo's backend
    # registry exists.
    after_import(_BACKEND_REGISTRY_MODULE, _register_dynamo_backends)
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
    from npusim.compile import inductor_backend

    _register_device_interface()
    inductor_backend.register()
    return inductor_backend.codegen_class(name)


# Packages of Ascend's graph compiler that npusim serves where none is installed: the top-level
# name and npusim's folder for it.
_SERVED_PACKAGES = {"torchair": "_torchair", "npugraph_ex": "_npugraph_ex"}


class _TorchairFinder(importlib.abc.MetaPathFinder):
    """Serves ``torchair`` and ``npugraph_ex`` from npusim; placed last on ``sys.meta_path`` so
    that a real one on ``sys.path`` is always found first."""

    def find_spec(self, fullname, path=None, target=None):
        folder = _SERVED_PACKAGES.get(fullname)
        if folder is None:
            return None
        import os

        directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), folder)
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory]
        )


def install_torchair() -> None:
    if not any(isinstance(finder, _TorchairFinder) for finder in sys.meta_path):
        sys.meta_path.append(_TorchairFinder())

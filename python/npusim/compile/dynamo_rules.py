"""How Dynamo traces ``torch.npu`` calls: the same rules it applies to ``torch.cuda``.

Dynamo decides per function object whether a call goes into the graph, is constant-folded,
graph-breaks, or is inlined (``torch._dynamo.trace_rules``), and handles streams, events,
``current_stream``, ``synchronize`` and the ``device`` context by special cases keyed on the
``torch.cuda`` objects. ``torch.npu`` is npusim's Python package, so without rules Dynamo inlines
it down to npusim's C extension and graph-breaks there (a stream context alone broke a region
into seven graphs). Here every ``torch.cuda`` rule is repeated for the ``torch.npu`` function
of the same name, and the stream/event special cases get the npu objects next to the CUDA
ones, so a region with npu streams and events traces exactly where the CUDA one traces and
breaks exactly where the CUDA one breaks. torch_npu does the same (``torch_npu/dynamo``).

PyTorch keeps these rules in module-level tables without a registration API (except device
context managers and device interfaces); they are extended in place, once, when Dynamo loads.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

import npusim.npu as npu

_APPLIED = False


def _npu_counterpart(cuda_name: str) -> Any:
    """The ``torch.npu`` object at the place of ``torch.cuda.<path>`` (first the same path,
    then the same name at the top of ``torch.npu``); None when npusim has none."""
    path = cuda_name.split(".")[2:]
    if not path or any(part.startswith("_") for part in path):
        return None  # private helpers of the CUDA module have no npu meaning
    for candidate in (path, path[-1:]):
        value: Any = npu
        for part in candidate:
            value = getattr(value, part, None)
            if value is None:
                break
        if value is not None and callable(value):
            return value
    return None


def _loadable_name(value: Any) -> str | None:
    """A dotted name ``trace_rules.load_object`` turns back into ``value``."""
    module = getattr(value, "__module__", None) or ""
    qualname = getattr(value, "__qualname__", None) or ""
    if not module.startswith("npusim.") or not qualname or "." in qualname or "<" in qualname:
        return None
    import importlib

    try:
        if getattr(importlib.import_module(module), qualname) is not value:
            return None
    except (ImportError, AttributeError):
        return None
    return f"{module}.{qualname}"


def npu_trace_rules() -> dict[str, type]:
    """``{name of a torch.npu function: Dynamo variable class}``, one entry for each
    ``torch.cuda`` rule that has an npu counterpart."""
    from torch._dynamo import trace_rules

    rules: dict[str, type] = {}
    for table in trace_rules.torch_name_rule_map:
        if table is _NPU_TABLE:
            continue
        for cuda_name, variable in table.items():
            if not cuda_name.startswith("torch.cuda.") or "#" in cuda_name:
                continue
            counterpart = _npu_counterpart(cuda_name)
            if counterpart is None or inspect.isclass(counterpart):
                continue  # classes (Stream, Event, device) are handled as classes below
            name = _loadable_name(counterpart)
            if name is None:
                continue
            # One npu function reached from two CUDA names with different rules (a module-level
            # alias and a submodule function) takes the graph break: never trace what one of
            # the CUDA twins refuses.
            if rules.get(name, variable) is not variable and variable is not trace_rules.SkipFunctionVariable:
                continue
            rules[name] = variable
    return rules


_NPU_TABLE: dict[str, type] = {}


def _extend_trace_rules() -> None:
    from torch._dynamo import trace_rules

    _NPU_TABLE.clear()
    _NPU_TABLE.update(npu_trace_rules())
    if not any(table is _NPU_TABLE for table in trace_rules.torch_name_rule_map):
        trace_rules.torch_name_rule_map.append(_NPU_TABLE)
    trace_rules.clear_lru_cache()


def _extend_special_cases() -> None:
    """Hand ``torch.npu.current_stream`` / ``stream`` / ``synchronize`` to the handlers of
    their CUDA twins; fold ``is_available`` / ``current_device`` / ``get_device_properties``
    as the CUDA ones are folded."""
    from torch._dynamo.variables import torch as torch_variables

    handlers = torch_variables.TorchInGraphFunctionVariable._get_handlers()
    for cuda_function, npu_function in (
        (torch.cuda.current_stream, npu.current_stream),
        (torch.cuda.synchronize, npu.synchronize),
    ):
        handlers.setdefault(npu_function, handlers[cuda_function])
    from torch._dynamo.device_interface import get_interface_for_device

    stream_handler = handlers.get(get_interface_for_device("cuda").stream)
    if stream_handler is not None:
        handlers.setdefault(npu.stream, stream_handler)

    for cuda_function, npu_function in (
        (torch.cuda.current_device, npu.current_device),
        (torch.cuda.is_initialized, npu.is_initialized),
    ):
        if cuda_function in torch_variables.constant_fold_functions_need_guards:
            torch_variables.constant_fold_functions_need_guards.setdefault(npu_function, None)
    # The folded properties are a constant of the graph, as torch.cuda's are.
    from torch._dynamo.utils import common_constant_types

    from npusim.npu.devices import _NPUDeviceProperties

    if torch.cuda._CudaDeviceProperties in common_constant_types:
        common_constant_types.add(_NPUDeviceProperties)
    for cuda_function, npu_function in (
        (torch.cuda.current_device, npu.current_device),
        (torch.cuda.is_initialized, npu.is_initialized),
        (torch.cuda.get_device_properties, npu.get_device_properties),
        (torch.cuda.is_available, npu.is_available),
    ):
        if cuda_function in torch_variables.constant_fold_functions:
            torch_variables.constant_fold_functions.setdefault(npu_function, None)


def _npu_stream_variable():
    from torch._dynamo.variables import streams

    class NpuStreamVariable(streams.StreamVariable):
        """``torch.npu.Stream`` in a traced region; ``npu_stream`` reads as the stream's id,
        as ``cuda_stream`` does for CUDA."""

        _cpython_type = npu.Stream

        def var_getattr(self, tx, name: str):
            if name != "npu_stream":
                return super().var_getattr(tx, name)
            # The traced value may be a plain torch.Stream (Dynamo registers the current stream
            # through torch.accelerator); npusim's handle of a stream is its id.
            from torch._dynamo.guards import GuardBuilder, install_guard
            from torch._dynamo.variables.constant import ConstantVariable

            if self.source:
                install_guard(self.source.make_guard(GuardBuilder.EQUALS_MATCH))
            return ConstantVariable.create(int(self.value.stream_id))

    return NpuStreamVariable


def _extend_stream_classes() -> None:
    """``torch.npu.Stream()`` / ``torch.npu.Event()`` are created in a traced region as
    ``torch.cuda.Stream()`` / ``Event()`` are (Dynamo's in-graph classes), and
    ``torch.npu.current_stream()`` answers an npu stream variable."""
    from torch._dynamo.variables import streams, user_defined

    streams._stream_fn_to_variable_cls.setdefault(npu.current_stream, _npu_stream_variable())

    cls = user_defined.UserDefinedClassVariable
    original = cls._in_graph_classes
    if getattr(original, "_npusim", False):
        return

    def in_graph_classes() -> set[type]:
        return original() | _NPU_IN_GRAPH_CLASSES

    in_graph_classes._npusim = True  # type: ignore[attr-defined]
    cls._in_graph_classes = staticmethod(in_graph_classes)


_NPU_IN_GRAPH_CLASSES = {npu.Stream, npu.Event, npu.SyncLaunchStream}


def _device_variable():
    from torch._dynamo.variables.ctx_manager import GenericDeviceVariable

    from npusim.compile.device_interface import NpuInterface
    from npusim.npu.devices import _get_device_index

    class NpuDeviceVariable(GenericDeviceVariable):
        """``with torch.npu.device(i):`` in a traced region, as ``torch.cuda.device``."""

        _exchange_fn = staticmethod(NpuInterface.exchange_device)
        _maybe_exchange_fn = staticmethod(NpuInterface.maybe_exchange_device)
        _get_device_index_fn = staticmethod(_get_device_index)

        def module_name(self) -> str:
            return "torch.npu"

        def python_type(self) -> type:
            return npu.device

    return NpuDeviceVariable


def _extend_device_context() -> None:
    from torch._dynamo.variables.ctx_manager import get_device_context_manager, register_device_context_manager

    if get_device_context_manager(npu.device) is None:
        register_device_context_manager(npu.device, _device_variable())


def apply() -> None:
    """Install the npu rules into Dynamo; idempotent. Runs when Dynamo loads its device
    registry (npusim.compile.install)."""
    global _APPLIED
    if _APPLIED:
        return
    _extend_trace_rules()
    _extend_special_cases()
    _extend_stream_classes()
    _extend_device_context()
    _APPLIED = True

"""The operator handlers of NPUGraph's automatic dispatch capture (torch_npu's
``torch_npu.npu._npugraph_handlers``).

``torch.npu.graph(g, auto_dispatch_capture=True)`` captures each operator that has a handler as
its own task group, so that ``g.update(cpu_update_input=[...])`` can later give it new host
arguments (``actual_seq_lengths`` of fused inference attention, ``context_lens`` of paged
attention, ...) without a new capture. A handler says how: ``prepare_capture`` may swap the
operator for its ``out=`` form with preallocated outputs (a task group updates a kernel in
place), ``postprocess_result`` gives the caller its result back, and ``UPDATE_SPECS`` names,
for each operator, where each update key lives in the recorded call (``("arg", index, key)`` or
``("kwarg", name, key)``).

Handlers are stateless: the registry holds classes, and every hook is a classmethod.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import torch

__all__ = ["NpuGraphOpHandler", "register_npu_graph_handler"]

_log = logging.getLogger(__name__)

# Operator name as ``func.__name__`` reports it ("name", "name.default", "name.out") -> handler class.
_NPU_GRAPH_OP_HANDLERS: dict[str, type] = {}


class NpuGraphOpHandler:
    r"""Base class of the operator handlers of NPUGraph's automatic dispatch capture.

    Subclasses override the classmethod hooks; ``UPDATE_SPECS`` maps an operator name to the
    list of ``(location, index_or_name, key)`` of its updatable arguments.
    """

    UPDATE_SPECS: dict[str, list[tuple[str, Any, str]]] = {}

    @classmethod
    def prepare_capture(cls, func, args, kwargs):
        r"""The call to record, ``(func, args, kwargs)``: by default the call as issued."""
        return func, args, kwargs

    @classmethod
    def postprocess_result(cls, result, kwargs):
        r"""What the caller gets back from the recorded call (by default its result)."""
        return result

    @classmethod
    def get_update_specs(cls, op_name):
        r"""The update specs of ``op_name`` (an empty list when it has none)."""
        return cls.UPDATE_SPECS.get(op_name, [])

    @classmethod
    def update_args(cls, dispatch_record, update_input):
        r"""Write the values of ``update_input`` into the recorded call, where the specs say."""
        for location, where, key in cls.get_update_specs(dispatch_record.op_cache_entry.__name__):
            if key not in update_input:
                continue
            if location == "arg":
                if where < len(dispatch_record.args):
                    dispatch_record.args[where] = update_input[key]
            elif location == "kwarg":
                dispatch_record.kwargs[where] = update_input[key]

    @classmethod
    def record_wrap_kwarg(cls, key, value, tensor_param_names):
        r"""How the record keeps keyword argument ``key``: device tensors as they are (the graph
        owns their memory), everything else as a copy, so that the caller changing a list it
        passed does not change the recorded call."""
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return type(value)(t if _is_npu_tensor(t) else copy.deepcopy(t) for t in value)
        if key in tensor_param_names and _is_npu_tensor(value):
            return value
        return copy.deepcopy(value)


def _is_npu_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "npu"


def register_npu_graph_handler(op_names):
    r"""Class decorator: registers the handler class for ``op_names`` (a name or a list of them,
    as ``func.__name__`` reports them: ``"op"``, ``"op.default"``, ``"op.out"``)."""

    def decorator(handler_cls):
        names = op_names if isinstance(op_names, (list, tuple)) else [op_names]
        for name in names:
            previous = _NPU_GRAPH_OP_HANDLERS.get(name)
            if previous is not None:
                _log.warning("NpuGraphOpHandler for '%s' is being overridden: %s -> %s",
                             name, previous.__name__, handler_cls.__name__)
            _NPU_GRAPH_OP_HANDLERS[name] = handler_cls
        return handler_cls

    return decorator


def handler_for(op_name: str):
    """The handler class registered for ``op_name``, or None."""
    return _NPU_GRAPH_OP_HANDLERS.get(op_name)


def update_specs_of(handler_cls: Any, op_name: str) -> list:
    """The update specs of ``op_name`` by ``handler_cls``: through ``get_update_specs`` when it
    has one, else its ``UPDATE_SPECS`` table (handlers written before ``get_update_specs``)."""
    reader = getattr(handler_cls, "get_update_specs", None)
    if reader is not None:
        return list(reader(op_name))
    return list(getattr(handler_cls, "UPDATE_SPECS", {}).get(op_name, []))

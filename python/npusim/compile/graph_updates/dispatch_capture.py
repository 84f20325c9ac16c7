"""NPUGraph's automatic dispatch capture (``torch.npu.graph(g, auto_dispatch_capture=True)``)
and ``NPUGraph.update(cpu_update_input)``, as torch_npu's ``_GraphDispatchMode`` does them.

While such a capture runs, every operator that has a handler (.op_handlers)
is captured as its own task group behind an ExternalEvent wait and reset, and the call is
recorded. ``update`` then writes new host arguments into each recorded call, re-issues it as a
task update on one update stream shared by all graphs, and records the call's event there: the
next replay waits for that record and computes with the new arguments.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from npusim._error_code import ErrCode, pta_error
from npusim.compile.graph_updates import op_handlers_builtin  # noqa: F401  (registers the built-in handlers)
from npusim.compile.graph_updates.external_event import ExternalEvent
from npusim.compile.graph_updates.op_handlers import _NPU_GRAPH_OP_HANDLERS
from npusim.compile.graph_updates.task_groups import (
    abort_task_update,
    graph_task_group_begin,
    graph_task_group_end,
    graph_task_update_begin,
    graph_task_update_end,
)

__all__ = ["GraphDispatchMode", "GraphDispatchRecord"]


@dataclass
class GraphDispatchRecord:
    """One operator call captured as a task group: what an update re-issues."""

    event: Any = None
    handle: Any = None
    kwargs: dict = field(default_factory=dict)
    args: list = field(default_factory=list)
    op_cache_entry: Any = None


def _schema_tensor_names(func) -> list[str]:
    """The names of the operator's tensor arguments."""
    names = []
    for argument in func._schema.arguments:
        kind = argument.type
        inner = getattr(kind, "getElementType", None)
        if isinstance(kind, torch.TensorType) or (inner is not None and isinstance(inner(), torch.TensorType)):
            names.append(argument.name)
    return names


class GraphDispatchMode(TorchDispatchMode):
    """Captures each handled operator as a task group and records the call for updates."""

    # One update stream for every graph of the process (created with the first graph).
    update_stream = None

    def __new__(cls, *args, **kwargs):
        if cls.update_stream is None:
            cls.update_stream = torch.npu.Stream()
        return super().__new__(cls)

    def __init__(self) -> None:
        super().__init__()
        self.graph_dispatch_records: list[GraphDispatchRecord] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler_cls = _NPU_GRAPH_OP_HANDLERS.get(func.__name__)
        if handler_cls is None:
            return func(*args, **kwargs)
        should_handle = getattr(handler_cls, "should_handle", None)
        if should_handle is not None and not should_handle(func, args, kwargs):
            return func(*args, **kwargs)
        stream = torch.npu.current_stream()
        event = ExternalEvent()
        event.wait(stream)
        event.reset(stream)
        actual_func, args, kwargs = handler_cls.prepare_capture(func, args, kwargs)
        graph_task_group_begin(stream)
        result = actual_func(*args, **kwargs)
        handle = graph_task_group_end(stream)
        self.graph_dispatch_records.append(self._record(event, handle, args, kwargs, actual_func, handler_cls))
        return handler_cls.postprocess_result(result, kwargs)

    @staticmethod
    def _record(event, handle, args, kwargs, func, handler_cls) -> GraphDispatchRecord:
        tensor_names = _schema_tensor_names(func)
        recorded_args = [a if isinstance(a, torch.Tensor) and a.device.type == "npu" else copy.deepcopy(a)
                         for a in args]
        recorded_kwargs = {key: handler_cls.record_wrap_kwarg(key, value, tensor_names)
                           for key, value in kwargs.items()}
        return GraphDispatchRecord(event=event, handle=handle, kwargs=recorded_kwargs, args=recorded_args,
                                   op_cache_entry=func)

    def update_capture_record(self, cpu_update_input) -> None:
        """Give the recorded calls new host arguments: one dict per record, or one for all."""
        records = self.graph_dispatch_records
        if len(cpu_update_input) == 1:
            cpu_update_input = [dict(cpu_update_input[0]) for _ in records]
        if len(cpu_update_input) != len(records):
            raise RuntimeError(
                f"Currently, there are {len(records)} operators that need to be updated by capture, and there "
                f"are only {len(cpu_update_input)} elements in the incoming cpu_update_input list"
                + pta_error(ErrCode.PARAM)
            )
        stream = self.update_stream
        with torch.npu.stream(stream):
            for record, update_input in zip(records, cpu_update_input):
                handler_cls = _NPU_GRAPH_OP_HANDLERS.get(record.op_cache_entry.__name__)
                if handler_cls is None:
                    raise RuntimeError(
                        f"No handler for recorded op: {record.op_cache_entry.__name__}. This indicates the handler "
                        "was unregistered between capture and update." + pta_error(ErrCode.PARAM)
                    )
                graph_task_update_begin(stream, record.handle)
                try:
                    for key, value in update_input.items():
                        if key in record.kwargs:
                            record.kwargs[key] = value
                    handler_cls.update_args(record, update_input)
                    record.op_cache_entry(*record.args, **record.kwargs)
                except BaseException:
                    abort_task_update(stream)
                    raise
                graph_task_update_end(stream)
                record.event.record(stream)

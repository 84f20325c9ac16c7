"""Task groups of an NPUGraph and their updates (torch_npu's ``graph_task_group_begin`` /
``graph_task_group_end`` / ``graph_task_update_begin`` / ``graph_task_update_end``).

A task group marks kernels of a capture whose host arguments may change after the capture
(the valid lengths of fused inference attention, the context lengths of paged attention). The
handle that ``graph_task_group_end`` returns names the group; later, on a stream that is not
capturing, ``graph_task_update_begin(stream, handle)`` ... ``graph_task_update_end(stream)``
issues the same operators again with new arguments. As on the chip, these calls do not run:
they rewrite the group's kernels, so every later replay computes with the new arguments (the
update itself is a small task of the update stream, which an ExternalEvent recorded after it
orders before the replay). Tensors keep the memory they were captured with: an update may
change host values (lists, host tensors, scalars), and passes the captured device tensors.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from npusim._error_code import ErrCode, SubModule, error_suffix
from npusim.compile import _native, graph_capture_state

__all__ = ["graph_task_group_begin", "graph_task_group_end", "graph_task_update_begin", "graph_task_update_end"]


def _graph_error(message: str, code: ErrCode = ErrCode.NOT_SUPPORT) -> RuntimeError:
    return RuntimeError(message + error_suffix(SubModule.GRAPH, code))


# Fresh allocations: no kernel (the memory exists; replay leaves them alone).
ALLOCATIONS = frozenset({
    "aten::empty",
    "aten::empty_strided",
    "aten::empty_like",
    "aten::new_empty",
    "aten::new_empty_strided",
    # torch_npu's workspace and output allocators of fused inference attention: they size and
    # allocate memory, they launch nothing.
    "npu::_npu_fused_infer_attention_score_get_max_workspace",
    "npu::_npu_fused_infer_attention_score_infer_output",
    "npu::_npu_fused_infer_attention_score_v2_get_max_workspace",
    "npu::_npu_fused_infer_attention_score_v2_infer_output",
})


def launches_kernel(func) -> bool:
    """Whether operator ``func`` launches a kernel (not an allocation, not a view)."""
    schema = func._schema
    if schema.name in ALLOCATIONS:
        return False
    returns = schema.returns
    return not (returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns))


def snapshot_host_values(value: Any) -> Any:
    """``value`` with its host (non-pinned CPU) tensors copied: a kernel launch takes host
    arguments by value, so changing such a tensor after the launch changes nothing the graph
    runs; only an update does."""
    def copy(item: Any) -> Any:
        if isinstance(item, torch.Tensor) and item.device.type == "cpu" and not item.is_pinned():
            return item.clone()
        return item

    return tree_map(copy, value)


class TaskGroup:
    """The kernels captured between a task group's begin and end; replay runs them in order.
    An update replaces their recorded calls and plans them again."""

    __slots__ = ("body", "steps", "replay", "device")

    def __init__(self, body: list) -> None:
        self.body = body
        self.steps: list[Callable[[], None]] = []
        self.device = -1
        steps = self.steps

        def run() -> None:
            for step in steps:
                step()

        self.replay = run

    @property
    def name(self) -> str:
        return f"task group ({len(self.body)} operations)"

    def plan(self, device: int) -> str:
        self.device = device
        for operation in self.body:
            operation.plan(device)
        self.steps[:] = [operation.replay for operation in self.body if operation.replay is not None]
        return "task group"

    def kernels(self) -> list:
        """The operators of the group that an update re-issues (not the allocations and views a
        kernel does not launch for)."""
        return [operation for operation in self.body
                if hasattr(operation, "func") and launches_kernel(operation.func)]


class TaskGroupHandle:
    r"""The handle of a captured task group (``graph_task_group_end``'s result)."""

    # The group only, not its graph: a graph keeps the handles of its automatic dispatch
    # records, and a cycle back to it would hold its memory pool past ``del graph``.
    __slots__ = ("group",)

    def __init__(self, group: TaskGroup) -> None:
        self.group = group

    def __repr__(self) -> str:
        return f"<torch_npu.npu.TaskGroupHandle of {self.group.name}>"


def graph_task_group_begin(stream) -> None:
    r"""Begin a task group on ``stream``, which must be capturing an NPUGraph."""
    capture = graph_capture_state.capturing_on(stream)
    if capture is None:
        raise _graph_error("graph_task_group_begin() needs a stream that is capturing an NPUGraph.")
    capture.open_task_group()


def graph_task_group_end(stream) -> TaskGroupHandle:
    r"""End the task group begun on ``stream``; returns its handle for later updates."""
    capture = graph_capture_state.capturing_on(stream)
    if capture is None:
        raise _graph_error("graph_task_group_end() needs a stream that is capturing an NPUGraph.")
    return TaskGroupHandle(capture.close_task_group())


# The update in progress per stream (a stream runs one update region at a time).
_updates: dict[Any, "_TaskUpdate"] = {}


def graph_task_update_begin(stream, handle: TaskGroupHandle) -> None:
    r"""Begin updating the task group ``handle``: the operators issued on ``stream`` until
    :func:`graph_task_update_end` give its kernels new arguments instead of running."""
    if not isinstance(handle, TaskGroupHandle):
        raise _graph_error(f"graph_task_update_begin() needs a task group handle, got {type(handle).__name__}.",
                           ErrCode.PARAM)
    if graph_capture_state.capturing_on(stream) is not None:
        raise _graph_error("graph_task_update_begin() cannot run on a stream that is capturing an NPUGraph.")
    if stream in _updates:
        raise _graph_error("graph_task_update_begin() while an update is already in progress on this stream.")
    update = _TaskUpdate(stream, handle.group)
    _updates[stream] = update
    update.mode.__enter__()


def graph_task_update_end(stream) -> None:
    r"""End the update begun on ``stream``: the task group's kernels take the new arguments."""
    update = _updates.pop(stream, None)
    if update is None:
        raise _graph_error("graph_task_update_end() without graph_task_update_begin() on this stream.")
    update.mode.__exit__(None, None, None)
    try:
        update.apply()
    finally:
        update.close()


def abort_task_update(stream) -> None:
    """Drop the update in progress on ``stream`` (an error inside it): the group keeps its calls."""
    update = _updates.pop(stream, None)
    if update is not None:
        update.mode.__exit__(None, None, None)
        update.close()


class _TaskUpdate:
    def __init__(self, stream, group: TaskGroup) -> None:
        self.stream, self.group = stream, group
        self.calls: list[tuple[Any, tuple, dict]] = []
        self.mode = _TaskUpdateMode(self)

    def take(self, func, args, kwargs) -> Any:
        kernels = self.group.kernels()
        index = len(self.calls)
        if index >= len(kernels):
            raise _graph_error(
                f"graph task update: {func} is one operator more than the task group holds ({len(kernels)})."
            )
        captured = kernels[index]
        if captured.func is not func:
            raise _graph_error(
                f"graph task update: operator {index} of the task group is {captured.func}, the update issued {func}."
            )
        self.calls.append((func, snapshot_host_values(args), snapshot_host_values(kwargs)))
        # The update is one launch from the host (the operator's new launch arguments) of a task
        # on the update stream that rewrites the captured kernel; the kernel itself does not run.
        _native.charge_graph_launch(self.stream.device_index)
        return _result_of(func, args, kwargs, captured.outputs)

    def close(self) -> None:
        """Drops the issued calls and the mode (a cycle with it would keep their tensors)."""
        self.calls = []
        self.mode = None

    def apply(self) -> None:
        kernels = self.group.kernels()
        if len(self.calls) != len(kernels):
            raise _graph_error(
                f"graph task update: the update issued {len(self.calls)} operators, the task group holds "
                f"{len(kernels)}."
            )
        for operation, (func, args, kwargs) in zip(kernels, self.calls):
            operation.args, operation.kwargs = _keep_captured_tensors(operation.args, args), \
                _keep_captured_tensors(operation.kwargs, kwargs)
        if self.group.device >= 0:
            self.group.plan(self.group.device)  # the graph was planned already: replan the group


def _keep_captured_tensors(captured: Any, new: Any) -> Any:
    """The new arguments, with each device tensor that sits where the capture had one replaced
    by the captured one (the graph's own view of that memory)."""
    captured_flat, _ = tree_flatten(captured)
    new_flat, spec = tree_flatten(new)
    if len(captured_flat) != len(new_flat):
        return new
    merged = [old if isinstance(old, torch.Tensor) and isinstance(item, torch.Tensor) and item.device.type == "npu"
              and old.device.type == "npu" and old.data_ptr() == item.data_ptr() else item
              for old, item in zip(captured_flat, new_flat)]
    return tree_unflatten(merged, spec)


def _result_of(func, args, kwargs, captured_outputs) -> Any:
    """What an update's operator call returns: the tensors it writes (out= and in-place forms),
    or the captured results (functional forms), as the updated kernel produces them."""
    returns = func._schema.returns
    if not returns:
        return None
    if all(r.alias_info is not None and r.alias_info.is_write for r in returns):
        arguments = func._schema.arguments
        written = []
        for r in returns:
            for position, argument in enumerate(arguments):
                if argument.alias_info is not None and argument.alias_info.before_set == r.alias_info.before_set:
                    written.append(args[position] if position < len(args) else kwargs[argument.name])
                    break
        return written[0] if len(written) == 1 else tuple(written)
    return captured_outputs


class _TaskUpdateMode(TorchDispatchMode):
    """Takes the operators issued on the updating stream as the task group's new calls."""

    def __init__(self, update: _TaskUpdate) -> None:
        super().__init__()
        self.update = update

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (func.namespace == "profiler" or torch.npu.current_stream() != self.update.stream
                or not launches_kernel(func)):
            return func(*args, **kwargs)
        return self.update.take(func, args, kwargs)

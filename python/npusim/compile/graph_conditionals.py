"""Conditional nodes in an NPUGraph: ``torch.cond`` captured as an if/else of the graph
(torch_npu's ``torch_npu.npu._npugraph_conditional_nodes``).

Inside a capture, :class:`NPUGraphCaptureControlFlowOpDispatchMode` turns ``torch.cond(pred,
true_fn, false_fn, operands)`` into two conditional bodies of the graph: the true branch runs on
replay when ``pred`` (a one-element npu tensor) is nonzero *at that point of the replay*, the
false branch, which ends by copying its results into the true branch's outputs, when it is zero.
So the graph keeps one set of outputs and follows the predicate's value at every replay, as the
chip's conditional nodes (ModelRI conditional tasks) do. (npusim's capture runs both branches
once while capturing; the captured outputs hold the false branch's values until a replay.)
:class:`ControlFlowOpWarmupDispatchMode` is the eager warm-up: outside a capture it captures the
branches once into a throwaway graph (so their kernels are ready), then runs ``torch.cond``
eagerly.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from npusim.compile import graphs

__all__ = ["NPUGraphCaptureControlFlowOpDispatchMode", "ControlFlowOpWarmupDispatchMode"]


@contextmanager
def _conditional_body(predicate: torch.Tensor) -> Iterator[None]:
    graph = graphs.NPUGraph.get_currently_capturing_graph()
    graph.begin_capture_to_if_node(predicate)
    try:
        yield
    finally:
        graph.end_capture_to_conditional_node()


def if_else_node(predicate: torch.Tensor, true_fn, false_fn, operands) -> Any:
    """Captures ``true_fn`` and ``false_fn`` as the two conditional bodies; returns the outputs."""
    if not isinstance(predicate, torch.Tensor) or predicate.device.type != "npu":
        raise ValueError("Conditions must be on an npu device to use conditional nodes in npu graphs")
    with _conditional_body(predicate):
        true_outputs = true_fn(*operands)
    with _conditional_body(torch.logical_not(predicate)):
        false_outputs = false_fn(*operands)
        # One set of outputs for both branches: the false branch writes the true branch's.
        for kept, produced in zip(pytree.tree_iter(true_outputs), pytree.tree_iter(false_outputs)):
            kept.copy_(produced)
    return true_outputs


class NPUGraphCaptureControlFlowOpDispatchMode(TorchDispatchMode):
    """Inside a capture: ``torch.cond`` becomes an if/else of the graph."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __init__(self) -> None:
        self.supports_higher_order_operators = True
        super().__init__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.higher_order.cond:
            with self:
                return if_else_node(*args)
        return func(*args, **(kwargs or {}))


class ControlFlowOpWarmupDispatchMode(TorchDispatchMode):
    """Warm-up: ``torch.cond`` outside a capture is captured once (then dropped) and run eagerly;
    inside a capture it becomes an if/else of the graph."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __init__(self) -> None:
        super().__init__()
        self.supports_higher_order_operators = True
        self.capture_stream = torch.npu.Stream()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.higher_order.cond:
            if graphs.is_current_stream_capturing():
                with self:
                    return if_else_node(*args)
            with graphs.graph(graphs.NPUGraph(), stream=self.capture_stream, capture_error_mode="relaxed"), self:
                if_else_node(*args)
        return func(*args, **kwargs)

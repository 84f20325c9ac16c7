"""``torch.npu.NPUGraph``: capture the operators of a region once, replay them many times.

On the chip (aclgraph), capture records the kernels a region launches into a model that one
host call replays, on the memory the capture used. npusim records the operators of the region
(their arguments and the tensors they produced, which keep the captured memory in the graph's
pool) and replay runs them again in order, writing each result into the captured output
memory, so tensors the user kept from the capture see the new values, as on the chip.

The timeline prices a replay as the real stack runs it: one graph launch from the host, and
each kernel's device time with no per-kernel host dispatch.

Capture restrictions (as CUDA and torch_npu graphs): no synchronization, no host reads of
device data (``.item()``, ``.cpu()``, data-dependent shapes) and no host-device copies inside
a capture. Each raises the torch_npu-style error and ends the capture.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from npusim._error_code import ErrCode, SubModule, error_suffix
from npusim.compile import kernel_launch

__all__ = [
    "NPUGraph",
    "graph",
    "graph_pool_handle",
    "make_graphed_callables",
    "is_current_stream_capturing",
]

_state = threading.local()
_pool_ids = itertools.count(1)

# Operators that make the host wait for device data: forbidden while capturing.
_HOST_READS = {
    "aten::_local_scalar_dense",
    "aten::item",
    "aten::nonzero",
    "aten::masked_select",
    "aten::unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::is_nonzero",
    "aten::equal",
}


def _capture_error(what: str) -> RuntimeError:
    return RuntimeError(
        f"{what} is not permitted when stream is capturing: the operation would make the host wait "
        "for the device (or read device memory) inside an NPUGraph capture. Move it before the "
        "capture or after replay()." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
    )


def uncapturable(kernel: str) -> RuntimeError:
    """The error for an Inductor-generated npu kernel inside a capture (it runs outside the
    dispatcher, so npusim cannot record it)."""
    return RuntimeError(
        f"The Inductor kernel {kernel} cannot be captured into an NPUGraph by npusim: compiled "
        "regions run their fused kernels outside the operator dispatcher. Capture the eager "
        "region, or compile without capturing." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
    )


def is_current_stream_capturing() -> bool:
    r"""Whether the current stream is capturing an NPUGraph (on this thread)."""
    return getattr(_state, "capture", None) is not None


def graph_pool_handle() -> tuple[int, int]:
    r"""A memory pool id that several graphs can share (``NPUGraph.capture_begin(pool=...)``)."""
    return (0, next(_pool_ids))


class _Operation:
    __slots__ = ("func", "args", "kwargs", "outputs")

    def __init__(self, func, args, kwargs, outputs):
        self.func, self.args, self.kwargs, self.outputs = func, args, kwargs, outputs


def _host_alias(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same memory as an npu tensor (npu memory is host memory)."""
    storage = tensor.untyped_storage()
    nbytes = storage.nbytes()
    if nbytes == 0:
        return torch.empty(tensor.shape, dtype=tensor.dtype)
    buffer = (ctypes.c_char * nbytes).from_address(storage.data_ptr())
    flat = torch.frombuffer(buffer, dtype=torch.uint8).view(tensor.dtype)
    return flat.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())


class _CaptureMode(TorchDispatchMode):
    """Records every operator of the region; refuses host reads and host-device copies."""

    def __init__(self, graph: NPUGraph):
        super().__init__()
        self.graph = graph

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _HOST_READS:
            raise _capture_error(f"{name} (a host read of device data)")
        if name in ("aten::copy_", "aten::_to_copy", "aten::_copy_from"):
            devices = {t.device.type for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
            target = kwargs.get("device")
            if target is not None:
                devices.add(torch.device(target).type)
            if "cpu" in devices and "npu" in devices:
                raise _capture_error(f"{name} between host and device")
        outputs = func(*args, **kwargs)
        self.graph._operations.append(_Operation(func, args, kwargs, outputs))
        return outputs


class NPUGraph:
    r"""Wrapper around an NPU graph (torch_npu's ``torch.npu.NPUGraph``).

    Use :class:`graph` (a context manager) or :func:`make_graphed_callables` to capture.
    """

    def __init__(self, keep_graph: bool = False):
        self._operations: list[_Operation] = []
        self._mode: _CaptureMode | None = None
        self._pool: tuple[int, int] | None = None
        self._device = -1
        self._captured = False
        self._saved_synchronize: dict[str, Callable] = {}

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global") -> None:
        r"""Begin capturing the operators of the current thread into this graph."""
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(
                f"Unknown capture_error_mode {capture_error_mode!r}; expected 'global', 'thread_local' "
                "or 'relaxed'." + error_suffix(SubModule.GRAPH, ErrCode.VALUE)
            )
        if is_current_stream_capturing():
            raise RuntimeError(
                "Cannot begin a capture: the current stream is already capturing."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        if self._captured:
            raise RuntimeError(
                "This NPUGraph already holds a capture; call reset() before capturing again."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        torch.npu.synchronize()  # as on the chip: the capture starts on an idle stream
        self._pool = pool if pool is not None else graph_pool_handle()
        self._device = torch.npu.current_device()
        self._operations = []
        self._mode = _CaptureMode(self)
        _state.capture = self
        kernel_launch.active_captures += 1
        self._forbid_synchronization()
        self._mode.__enter__()

    def capture_end(self) -> None:
        r"""End the capture; the graph can then be replayed."""
        if self._mode is None:
            raise RuntimeError(
                "capture_end() without capture_begin()." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        self._finish_capture()
        self._captured = True

    def _finish_capture(self) -> None:
        mode, self._mode = self._mode, None
        mode.__exit__(None, None, None)
        self._allow_synchronization()
        _state.capture = None
        kernel_launch.active_captures -= 1

    def _abort_capture(self) -> None:
        if self._mode is not None:
            self._finish_capture()
        self._operations = []

    def _forbid_synchronization(self) -> None:
        npu = torch.npu

        def refuse(what: str):
            def synchronize(*args, **kwargs):
                raise _capture_error(what)

            return synchronize

        self._saved_synchronize = {
            "synchronize": npu.synchronize,
            "Stream.synchronize": npu.Stream.synchronize,
            "Event.synchronize": npu.Event.synchronize,
        }
        npu.synchronize = refuse("torch.npu.synchronize()")
        npu.Stream.synchronize = refuse("Stream.synchronize()")
        npu.Event.synchronize = refuse("Event.synchronize()")

    def _allow_synchronization(self) -> None:
        npu = torch.npu
        if self._saved_synchronize:
            npu.synchronize = self._saved_synchronize["synchronize"]
            npu.Stream.synchronize = self._saved_synchronize["Stream.synchronize"]
            npu.Event.synchronize = self._saved_synchronize["Event.synchronize"]
            self._saved_synchronize = {}

    def replay(self) -> None:
        r"""Run the captured operators again on the captured memory."""
        if not self._captured:
            raise RuntimeError(
                "Called NPUGraph.replay without a preceding successful capture."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        from npusim.compile import _native

        _native.charge_graph_launch(self._device)
        _native.set_replaying_graph(True)
        try:
            for operation in self._operations:
                fresh = operation.func(*operation.args, **operation.kwargs)
                self._write_back(operation.outputs, fresh)
        finally:
            _native.set_replaying_graph(False)

    @staticmethod
    def _write_back(captured: Any, fresh: Any) -> None:
        # Results land in the captured output memory (a host-side move of the kernel's own
        # output, not a device copy: it is not charged).
        captured_flat, _ = tree_flatten(captured)
        fresh_flat, _ = tree_flatten(fresh)
        for old, new in zip(captured_flat, fresh_flat):
            if not isinstance(old, torch.Tensor) or old is new:
                continue
            if old.device.type == "npu" and new.device.type == "npu":
                if old.untyped_storage().data_ptr() == new.untyped_storage().data_ptr():
                    continue  # in place: already written
                with torch.no_grad():
                    _host_alias(old).copy_(_host_alias(new))
            else:
                with torch.no_grad():
                    old.copy_(new)

    def reset(self) -> None:
        r"""Release the capture and the memory it held."""
        self._abort_capture()
        self._captured = False

    def pool(self) -> tuple[int, int]:
        r"""The id of this graph's memory pool (to share it with another capture)."""
        if self._pool is None:
            raise RuntimeError(
                "NPUGraph.pool() before a capture." + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        return self._pool

    def enable_debug_mode(self) -> None:
        r"""Keep the captured operators for :meth:`debug_dump` (always kept in npusim)."""

    def debug_dump(self, debug_path: str) -> None:
        r"""Write the captured operators, one a line, to ``debug_path``."""
        with open(debug_path, "w", encoding="utf-8") as out:
            for operation in self._operations:
                out.write(f"{operation.func}\n")

    @property
    def operators(self) -> list[str]:
        """The captured operators, in order (npusim's view of the captured kernels)."""
        return [str(operation.func) for operation in self._operations]


class graph:
    r"""Context manager that captures the operators of its body into ``npu_graph``.

    Args:
        npu_graph (NPUGraph): the graph to capture into.
        pool (optional): a pool id from :func:`graph_pool_handle` or ``other_graph.pool()``.
        stream (torch.npu.Stream, optional): the capture stream.
        capture_error_mode (str, optional): "global", "thread_local" or "relaxed".
    """

    default_capture_stream: torch.npu.Stream | None = None

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, capture_error_mode: str = "global"):
        self.npu_graph = npu_graph
        self.pool = pool
        self.stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_context = None

    def __enter__(self):
        torch.npu.synchronize()
        if self.stream is not None:
            self._stream_context = torch.npu.stream(self.stream)
            self._stream_context.__enter__()
        self.npu_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            if exc_type is None:
                self.npu_graph.capture_end()
            else:
                self.npu_graph._abort_capture()
        finally:
            if self._stream_context is not None:
                self._stream_context.__exit__(exc_type, exc_value, traceback)
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    r"""Graphed versions of ``callables`` (functions or modules): each call copies its
    arguments into the captured inputs and replays the forward graph.

    npusim captures the forward pass; autograd of a graphed callable is not captured (the
    returned callable raises torch_npu's not-supported error when its inputs require grad).
    """
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    graphed = []
    for function, args in zip(callables, sample_args):
        args = args if isinstance(args, tuple) else (args,)
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args) or (
            isinstance(function, torch.nn.Module) and any(p.requires_grad for p in function.parameters())
            and torch.is_grad_enabled()
        ):
            raise RuntimeError(
                "make_graphed_callables: npusim captures forward passes only; call it under "
                "torch.no_grad() or with inputs and parameters that do not require grad."
                + error_suffix(SubModule.GRAPH, ErrCode.NOT_SUPPORT)
            )
        for _ in range(num_warmup_iters):
            function(*args)
        npu_graph = NPUGraph()
        with graph(npu_graph, pool=pool):
            static_outputs = function(*args)
        graphed.append(_GraphedCallable(npu_graph, args, static_outputs))
    return graphed[0] if single else tuple(graphed)


class _GraphedCallable:
    def __init__(self, npu_graph: NPUGraph, static_inputs: tuple, static_outputs: Any):
        self.graph = npu_graph
        self.static_inputs = static_inputs
        self.static_outputs = static_outputs

    def __call__(self, *args):
        if len(args) != len(self.static_inputs):
            raise RuntimeError(
                f"graphed callable expects {len(self.static_inputs)} arguments, got {len(args)}"
                + error_suffix(SubModule.GRAPH, ErrCode.PARAM)
            )
        with torch.no_grad():
            for static, value in zip(self.static_inputs, args):
                if isinstance(static, torch.Tensor) and static is not value:
                    static.copy_(value)
        self.graph.replay()
        return tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, self.static_outputs)

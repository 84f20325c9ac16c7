"""Host functions on a stream (torch_npu's ``torch.npu._launch_host_func`` and friends).

On the chip a host function is a task of the stream (aclrtLaunchCallback / aclrtLaunchHostFunc):
it runs on the host once the stream's earlier work is done, and a capture records it into the
graph, so every replay runs it again at its place among the graph's kernels. npusim computes
each kernel's data when it is issued, so the earlier work of the stream is done when the host
function is launched: outside a capture it runs at once; on a capturing stream it becomes a
replay step of the graph (called, with the same arguments, at its place in every replay).

``_launch_host_func_pending`` passes tensors as *pointer specs* (``("host_tensor_ptr", address,
nbytes, shape, dtype)``, torch_npu.npu.graphs._make_npugraph_tensor_ptr_spec): when the function
runs, each is replaced by a *buffer spec* holding a copy of those bytes at that moment
(``("host_tensor_buffer", bytearray, shape, dtype)``), which the function materializes
(torch_npu.npu.graphs._materialize_npugraph_tensor_arg).
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import torch

from npusim.compile import graphs

__all__ = [
    "TENSOR_PTR_SPEC_MARKER",
    "TENSOR_BUFFER_SPEC_MARKER",
    "launch_host_func",
    "launch_host_func_pending",
    "subscribe_report",
    "unsubscribe_report",
    "tensor_ptr_spec",
    "materialize_tensor_arg",
]

# torch_npu's markers (torch_npu/npu/graphs.py).
TENSOR_PTR_SPEC_MARKER = "host_tensor_ptr"
TENSOR_BUFFER_SPEC_MARKER = "host_tensor_buffer"

# Streams with a subscribed report thread (aclrtSubscribeReport), by (device, stream id).
_subscribed: set[tuple[int, int]] = set()


class _HostFunctionStep:
    """A host function recorded by a capture: runs at its place in every replay."""

    __slots__ = ("name", "replay")

    def __init__(self, name: str, replay: Callable[[], None]):
        self.name, self.replay = name, replay

    def plan(self, device: int) -> str:
        return "host function"


def _check_stream(stream: Any, what: str) -> None:
    if not isinstance(stream, torch.Stream):
        raise TypeError(f"{what}(): the stream must be a torch.npu.Stream, got {type(stream).__name__}")


def _run_on(stream: Any, name: str, call: Callable[[], None]) -> None:
    capture = graphs.active_capture()
    if capture is not None and capture._stream == stream:
        capture._operations.append(_HostFunctionStep(name, call))
        return
    call()


def launch_host_func(stream: Any, fn: Callable[[Any], Any], user_data: Any) -> None:
    """``torch.npu._launch_host_func(stream, fn, user_data)``: ``fn(user_data)`` as a task of
    ``stream``."""
    _check_stream(stream, "_launch_host_func")
    _run_on(stream, getattr(fn, "__name__", "host function"), lambda: fn(user_data))


def _with_buffers(value: Any) -> Any:
    """``value`` with each pointer spec replaced by a buffer spec of its bytes now."""
    if isinstance(value, tuple) and len(value) == 5 and value[0] == TENSOR_PTR_SPEC_MARKER:
        _, address, nbytes, shape, dtype = value
        data = bytearray(ctypes.string_at(address, nbytes)) if nbytes else bytearray()
        return (TENSOR_BUFFER_SPEC_MARKER, data, shape, dtype)
    if isinstance(value, list):
        return [_with_buffers(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_with_buffers(item) for item in value)
    return value


def launch_host_func_pending(stream: Any, fn: Callable[..., Any], user_data: tuple) -> None:
    """``torch.npu._launch_host_func_pending(stream, fn, user_data)``: ``fn(*user_data)`` as a
    task of ``stream``, its pointer specs read when it runs."""
    _check_stream(stream, "_launch_host_func_pending")
    if not isinstance(user_data, tuple):
        raise TypeError(f"_launch_host_func_pending(): user_data must be a tuple, got {type(user_data).__name__}")
    _run_on(stream, getattr(fn, "__name__", "host function"), lambda: fn(*_with_buffers(user_data)))


def subscribe_report(stream: Any) -> None:
    """``torch.npu._subscribe_report(stream)``: a report thread serves the stream's callbacks."""
    _check_stream(stream, "_subscribe_report")
    _subscribed.add((stream.device_index, stream.stream_id))


def unsubscribe_report(stream: Any) -> None:
    """``torch.npu._unsubscribe_report(stream)``: waits for the stream, then ends the service."""
    _check_stream(stream, "_unsubscribe_report")
    stream.synchronize()
    _subscribed.discard((stream.device_index, stream.stream_id))


def tensor_ptr_spec(tensor: torch.Tensor) -> tuple:
    """torch_npu's pointer spec of a (host) tensor: marker, address, bytes, shape, dtype."""
    return (TENSOR_PTR_SPEC_MARKER, tensor.data_ptr(), tensor.numel() * tensor.element_size(),
            tuple(tensor.shape), tensor.dtype)


def materialize_tensor_arg(tensor_arg: Any) -> Any:
    """A buffer spec (or a list of them) as CPU tensors; anything else as it is."""
    if isinstance(tensor_arg, tuple) and len(tensor_arg) == 4 and tensor_arg[0] == TENSOR_BUFFER_SPEC_MARKER:
        _, buffer, shape, dtype = tensor_arg
        if len(buffer) == 0:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(buffer, dtype=dtype).reshape(shape)
    if isinstance(tensor_arg, list):
        return [materialize_tensor_arg(item) for item in tensor_arg]
    return tensor_arg

"""Streams and events of ``torch.npu``.

``Stream`` and ``Event`` subclass PyTorch's generic ``torch.Stream`` and ``torch.Event``: the
C++ device guard of npusim carries out query, synchronize, wait and timing on the simulated
timeline, so ``Event.elapsed_time`` answers in simulated milliseconds (how long the work would
take on the modelled chip), not in host time.

A stream is identified by its c10 stream id, encoded as torch_npu encodes it: ``(type << 5) |
index`` (``<< 3`` with ``STREAMS_PER_DEVICE=8``), type 0 for the default stream (id 0), 2 for the
four sync-launch streams, 3 for the normal and 4 for the high-priority pool. ``Stream.npu_stream``
is that id (torch_npu gives the raw ``aclrtStream`` pointer there; npusim has none), and
``ExternalStream`` wraps such a handle.
"""

from __future__ import annotations

import functools
import multiprocessing.reduction
import os
from typing import Any

import torch

from npusim import _C
from npusim._error_code import ErrCode, pta_error
from npusim.npu._lazy import _lazy_init
from npusim.npu.devices import (
    _get_device_index,
    current_device,
    device as _device_context,
    device_count,
    set_device,
)

__all__ = [
    "Stream",
    "Event",
    "ExternalStream",
    "SyncLaunchStream",
    "StreamContext",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
]

# c10::DeviceType::PrivateUse1
_PRIVATEUSE1 = int(torch._C._autograd.DeviceType.PrivateUse1)


class Stream(torch.Stream):
    r"""Wrapper around an NPU stream.

    A stream is an in-order queue of work on one device, independent of other streams.

    Args:
        device (torch.device, str or int, optional): the device of the stream; the current
            device if ``None`` (default) or a negative integer.
        priority (int, optional): priority of the stream, 0 (default) or negative; negative
            numbers mean high priority.
        is_sync_launch (bool, optional): take the stream from the pool of four sync-launch
            streams, whose tasks bypass the task queue (torch_npu's ``SyncLaunchStream``).
    """

    def __new__(cls, device: Any = None, priority: int = 0, is_sync_launch: bool = False, **kwargs):
        if "stream_id" in kwargs:
            # Wrapping an existing stream: Stream(stream_id=, device_index=, device_type=).
            kwargs.setdefault("device_type", _PRIVATEUSE1)
            unknown = set(kwargs) - {"stream_id", "device_index", "device_type"}
            if unknown:
                raise TypeError(f"Stream() got an unexpected keyword argument '{unknown.pop()}'")
            _check_stream_triple(kwargs["stream_id"], kwargs.get("device_index"), kwargs["device_type"])
            return super().__new__(cls, **kwargs)
        if kwargs:
            raise TypeError(f"Stream() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"priority must be an int, but got {type(priority).__name__}")
        _lazy_init()
        with _device_context(device):
            index = current_device()
            if is_sync_launch:
                stream_id = _C._sync_launch_stream(index)
            else:
                stream_id = _C._stream_from_pool(index, priority < 0)
        return super().__new__(cls, stream_id=stream_id, device_index=index, device_type=_PRIVATEUSE1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @property
    def npu_stream(self) -> int:
        """The stream's id (an int naming the stream on its device)."""
        return self.stream_id

    @property
    def priority(self) -> int:
        """0 for a normal stream, -1 for a high-priority one."""
        return int(_C._stream_priority(self.device_index, self.stream_id))

    @property
    def is_sync_launch(self) -> bool:
        """Whether the stream is one of the sync-launch streams (no task queue)."""
        return bool(_C._stream_is_sync_launch(self.device_index, self.stream_id))

    def wait_event(self, event: torch.Event) -> None:
        r"""Make all future work submitted to this stream wait for ``event``.

        Returns at once: only later work on the stream is affected.
        """
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        r"""Make all future work submitted to this stream wait for the work queued on ``stream``
        so far."""
        self.wait_event(_as_npu_stream(stream).record_event())

    def record_event(self, event: torch.Event | None = None) -> "Event":
        r"""Record an event on this stream (a new one if ``event`` is None) and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> bool:
        r"""Return whether all work submitted to this stream has completed."""
        return super().query()

    def synchronize(self) -> None:
        r"""Wait until all work submitted to this stream has completed."""
        super().synchronize()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, torch.Stream):
            return (
                self.stream_id == other.stream_id
                and self.device_index == other.device_index
                and self.device_type == other.device_type
            )
        return False

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device_index, self.device_type))

    def __repr__(self) -> str:
        return f"<torch_npu.npu.Stream device={self.device} npu_stream={self.npu_stream:#x}>"


class SyncLaunchStream(Stream):
    r"""A stream whose tasks are launched without the task queue (torch_npu's
    ``SyncLaunchStream``), e.g. to save a checkpoint while another device failed. The pool has
    four such streams per device, handed out round-robin.

    Args:
        device (torch.device, str or int, optional): the device of the stream; the current
            device if ``None``.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any):
        return super().__new__(cls, device, priority, is_sync_launch=True, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SyncLaunchStream) and super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()

    def __repr__(self) -> str:
        return f"<torch_npu.npu.SyncLaunchStream device={self.device} npu_stream={self.npu_stream:#x}>"


class ExternalStream(Stream):
    r"""Wrapper around an NPU stream created elsewhere, named by its handle (``Stream.npu_stream``).

    Work can be queued on it (``torch.npu.stream(ext)``); as on torch_npu, it cannot be queried
    or synchronized from here: synchronize it where it was created, or synchronize the device.

    Args:
        stream_ptr (int): the stream handle.
        device (torch.device, str or int, optional): the device of the stream; the current
            device if ``None``.
    """

    def __new__(cls, stream_ptr: int, device: Any = None, **kwargs: Any):
        _lazy_init()
        with _device_context(device):
            index = current_device()
        # The handle is not checked: only its creator knows it (as on torch_npu).
        return torch.Stream.__new__(cls, stream_id=int(stream_ptr), device_index=index, device_type=_PRIVATEUSE1)

    @property
    def npu_stream(self) -> int:
        """The stream's handle; unavailable with per-stream task queues, as on torch_npu."""
        if _per_stream_queue():
            raise RuntimeError(
                "External NPU stream is not supported in NPUStream::stream() with per-stream task queue."
                + pta_error(ErrCode.NOT_SUPPORT)
            )
        return self.stream_id

    def query(self) -> bool:
        raise RuntimeError(
            "Cannot query external NPU stream status. The caller must track stream completion externally."
            + pta_error(ErrCode.NOT_SUPPORT)
        )

    def synchronize(self) -> None:
        raise RuntimeError(
            "External NPU stream is not supported in NPUStream::synchronize. The caller is responsible for "
            "synchronization of external streams." + pta_error(ErrCode.NOT_SUPPORT)
        )


@functools.lru_cache(maxsize=None)
def _per_stream_queue() -> bool:
    """torch_npu's per-stream task queues (PER_STREAM_QUEUE, read once): on only with the task
    queue on (TASK_QUEUE_ENABLE not 0) and launches not blocking (ASCEND_LAUNCH_BLOCKING not 1)."""
    if os.environ.get("ASCEND_LAUNCH_BLOCKING", "0") == "1" or os.environ.get("TASK_QUEUE_ENABLE", "1") == "0":
        return False
    try:
        return int(os.environ.get("PER_STREAM_QUEUE", "0")) != 0
    except ValueError:
        return False


def _check_stream_triple(stream_id: Any, device_index: Any, device_type: Any) -> None:
    """Fail fast on a (stream_id, device_index, device_type) that names no npu stream, as
    torch_npu's unpack3 does, instead of building a stream that fails at first use."""
    for name, value in (("stream_id", stream_id), ("device_index", device_index), ("device_type", device_type)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, but got {type(value).__name__}")
    if device_type != _PRIVATEUSE1:
        raise RuntimeError(
            f"Invalid device_type : {device_type}, an npu stream has device_type {_PRIVATEUSE1}"
            + pta_error(ErrCode.VALUE)
        )
    count = device_count()
    if not 0 <= device_index < count:
        raise RuntimeError(
            f"Invalid device_index : {device_index}, valid device_index range is [0, {count})"
            + pta_error(ErrCode.VALUE)
        )
    _lazy_init()
    if stream_id < 0 or not _C._is_valid_stream(device_index, stream_id):
        raise RuntimeError(
            f"Unrecognized stream {stream_id} on device npu:{device_index} (I didn't recognize the "
            "stream type or index). Did you manufacture the StreamId yourself?  Don't do that; use "
            "the official API like torch.npu.Stream() to get a new stream." + pta_error(ErrCode.PARAM)
        )


def _wrap(stream_id: int, device_index: int) -> Stream:
    # A stream the runtime just named: no need to check it again.
    return torch.Stream.__new__(Stream, stream_id=stream_id, device_index=device_index, device_type=_PRIVATEUSE1)


def _as_npu_stream(value: torch.Stream) -> Stream:
    if isinstance(value, Stream):
        return value
    if isinstance(value, torch.Stream):
        return Stream(stream_id=value.stream_id, device_index=value.device_index, device_type=value.device_type)
    raise TypeError(f"Expected a torch.npu.Stream, but got: {type(value).__name__}")


class Event(torch.Event):
    r"""Wrapper around an NPU event: a marker in a stream, to synchronize streams and to time work.

    The event is created lazily, when it is first recorded. Timing is on the simulated
    timeline: ``elapsed_time`` gives the simulated milliseconds between two events.

    An event created with ``interprocess=True`` can be shared with other processes:
    ``ipc_handle()`` gives bytes that :meth:`from_ipc_handle` opens in another process, where
    ``query``, ``synchronize`` and ``wait`` follow the records made by any process (see
    :mod:`npusim.npu._ipc_event` for what is shared).

    Args:
        enable_timing (bool, optional): whether the event measures time (default: ``False``)
        blocking (bool, optional): if ``True``, :meth:`wait` blocks (default: ``False``)
        interprocess (bool): if ``True``, the event can be shared between processes
            (default: ``False``)
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False,
                *, _device_index: int | None = None):
        # An event opened from a handle belongs to the handle's device from the start.
        device = torch.device("npu") if _device_index is None else torch.device("npu", _device_index)
        self = super().__new__(
            cls,
            device=device,
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )
        # PyTorch's Event.elapsed_time accepts only an exact torch.Event as its argument
        # (Py_TYPE(other) == THPEventClass), never a subclass such as this one. Each npu Event
        # therefore keeps a plain twin, recorded together with it at the same point of the same
        # stream, that stands in for it as the argument of elapsed_time.
        self._twin = torch.Event(
            device=device, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess
        )
        self._interprocess = interprocess
        self._device_index = _device_index
        self._shared = None  # the SharedEventState once exported or imported
        self._imported = False
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @property
    def device(self) -> torch.device:
        """The event's device: the one it was recorded on, or for an event opened from an IPC
        handle, the handle's device before any record."""
        device = super().device
        if device.index is None and self._device_index is not None:
            return torch.device("npu", self._device_index)
        return device

    @property
    def npu_event(self) -> int:
        return self.event_id

    def ipc_handle(self) -> bytes:
        r"""Return the IPC handle of this event: bytes that :meth:`from_ipc_handle` opens in
        another process. The event must have been created with ``interprocess=True``; it need not
        have been recorded."""
        if not self._interprocess:
            raise RuntimeError(
                "ipc_handle() needs an event created with interprocess=True" + pta_error(ErrCode.PARAM)
            )
        if self._shared is None:
            from npusim.npu._ipc_event import SharedEventState

            _lazy_init()
            self._attach(SharedEventState.create(current_device()))
        return self._shared.handle()

    @classmethod
    def from_ipc_handle(cls, device: Any, handle: bytes) -> "Event":
        r"""Open an event exported by another process with :meth:`ipc_handle`, on ``device``."""
        from npusim.npu._ipc_event import SharedEventState

        index = _get_device_index(device, optional=True)
        if not 0 <= index < device_count():
            raise RuntimeError(
                f"Invalid device_index : {index}, valid device_index range is [0, {device_count()})"
                + pta_error(ErrCode.VALUE)
            )
        _lazy_init()
        event = cls(enable_timing=False, interprocess=True, _device_index=index)
        event._attach(SharedEventState.open(handle))
        event._imported = True
        return event

    def _attach(self, shared) -> None:
        import weakref

        self._shared = shared
        # Released with the event, or at exit: the creator's block disappears then.
        weakref.finalize(self, shared.close)

    def record(self, stream: torch.Stream | None = None) -> None:
        r"""Record the event in ``stream`` (the current stream by default)."""
        if stream is None:
            stream = current_stream()
        super().record(stream)
        self._twin.record(stream)
        if self._shared is not None:
            self._shared.publish_record()

    def wait(self, stream: torch.Stream | None = None) -> None:
        r"""Make all future work submitted to ``stream`` (the current stream by default) wait for
        this event."""
        if stream is None:
            stream = current_stream()
        if self._imported:
            # The other process's work has run: nothing to order on this process's timeline.
            self._shared.synchronize()
            return
        super().wait(stream)

    def query(self) -> bool:
        r"""Return whether all work captured by the event has completed."""
        if self._imported:
            return self._shared.query()
        return super().query() and (self._shared is None or self._shared.query())

    def elapsed_time(self, end_event: torch.Event) -> float:
        r"""Return the simulated time in milliseconds between this event and ``end_event``."""
        twin = getattr(end_event, "_twin", None)
        return super().elapsed_time(twin if isinstance(end_event, Event) and twin is not None else end_event)

    def recorded_time(self) -> int:
        r"""Wait for the event, then return when its work completed on the (simulated) device, in
        microseconds since the device started."""
        return int(_C._event_recorded_time_us(self.event_id))

    def synchronize(self) -> None:
        r"""Wait until all work captured by the event has completed."""
        if self._imported:
            self._shared.synchronize()
            return
        super().synchronize()
        if self._shared is not None:
            self._shared.synchronize()

    def __repr__(self) -> str:
        if self.event_id:
            return f"<torch_npu.npu.Event {self.event_id:#x}>"
        return "<torch_npu.npu.Event uninitialized>"


def _rebuild_event(device: Any, handle: bytes) -> "Event":
    """Unpickles an interprocess event in another process (torch_npu's rebuild_npu_event)."""
    return Event.from_ipc_handle(device, handle)


def _reduce_event(event: "Event"):
    """Pickles an interprocess event by its IPC handle (multiprocessing queues and pipes); an
    event created without ``interprocess=True`` refuses, as ``ipc_handle()`` does."""
    return (_rebuild_event, (event.device, event.ipc_handle()))


# As torch_npu's reductions: events go through multiprocessing by handle.
multiprocessing.reduction.register(Event, _reduce_event)


def set_stream(stream: torch.Stream | None) -> None:
    r"""Make ``stream`` the current stream of its device, and its device the current device.

    Prefer the :func:`stream` context manager. A ``None`` stream is a no-op.
    """
    if stream is None:
        return
    _lazy_init()
    if stream.device_index != current_device():
        set_device(stream.device_index)
    _C._set_stream(stream.device_index, stream.stream_id)


def current_stream(device: Any = None) -> Stream:
    r"""Return the current stream of a device (the current device by default)."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    return _wrap(_C._current_stream(index), index)


def default_stream(device: Any = None) -> Stream:
    r"""Return the default stream of a device (the current device by default)."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    return _wrap(_C._default_stream(index), index)


class StreamContext:
    r"""Context manager that selects a stream (and its device) and restores the previous ones.

    Args:
        stream (Stream): the selected stream; a no-op if ``None``.
    """

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.src_prev_stream: Stream | None = None
        self.dst_prev_stream: Stream | None = None

    def __enter__(self):
        target = self.stream
        if target is None:
            return self
        self.src_prev_stream = current_stream(None)
        # The target device's own current stream is restored too.
        if self.src_prev_stream.device_index != target.device_index:
            self.dst_prev_stream = current_stream(target.device_index)
        set_stream(target)
        return self

    def __exit__(self, type: Any, value: Any, traceback: Any):
        if self.stream is None:
            return False
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    r"""Context manager that makes ``stream`` current inside the ``with`` block."""
    return StreamContext(stream)

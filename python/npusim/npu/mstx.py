"""``torch_npu.npu.mstx``: MindStudio Tools Extension markers.

As in torch_npu, the Python functions check their arguments (a bad message, domain or stream
warns and returns -1, 0 or None instead of raising; any failure inside is logged, not raised) and
hand valid calls to the native binding ``torch_npu._C._mstx`` (:data:`native`): ``_mark``,
``_range_start``, ``_range_push`` on a stream, their ``*_on_host`` forms without one,
``_range_end`` and ``_range_pop``. On npusim the binding records the markers as profiler
annotations: a mark is an instant range, a range a ``record_function`` span named
``mstx::<message>``, so they show in the trace and in the HTML report. Push/pop ranges nest per
domain and thread; ``range_push`` returns the depth of the new range, ``range_pop`` the depth of
the range it ends (-1 when none is open).
"""

from __future__ import annotations

import functools
import sys
import threading
import types
import warnings

import torch

__all__ = ["mstx", "annotate", "mark", "range_start", "range_end", "range_push", "range_pop", "mstx_range"]


# ------------------------------------------------------------------ the native binding


def _enter(name: str):
    return torch.ops.profiler._record_function_enter_new(name, None)


def _exit(handle) -> None:
    torch.ops.profiler._record_function_exit._RecordFunction(handle)


_ranges: dict = {}  # range id -> open record_function handle
_next_id = [0]
_lock = threading.Lock()
_push_stacks = threading.local()  # domain -> list of open push ranges, per thread


def _native_mark_on_host(message: str, domain: str = "default") -> None:
    _exit(_enter(f"mstx::mark::{message}"))


def _native_mark(message: str, stream_id: int = 0, device_index: int = 0, device_type: int = 0,
                 domain: str = "default") -> None:
    _native_mark_on_host(message, domain)


def _native_range_start_on_host(message: str, domain: str = "default") -> int:
    handle = _enter(f"mstx::{message}")
    with _lock:
        _next_id[0] += 1
        range_id = _next_id[0]
        _ranges[range_id] = handle
    return range_id


def _native_range_start(message: str, stream_id: int = 0, device_index: int = 0, device_type: int = 0,
                        domain: str = "default") -> int:
    return _native_range_start_on_host(message, domain)


def _native_range_end(range_id: int, domain: str = "default") -> None:
    with _lock:
        handle = _ranges.pop(range_id, None)
    if handle is not None:  # an id that names no open range ends nothing
        _exit(handle)


def _stack(domain: str) -> list:
    stacks = getattr(_push_stacks, "by_domain", None)
    if stacks is None:
        stacks = _push_stacks.by_domain = {}
    return stacks.setdefault(domain, [])


def _native_range_push_on_host(message: str, domain: str = "default") -> int:
    stack = _stack(domain)
    stack.append(_enter(f"mstx::{message}"))
    return len(stack) - 1


def _native_range_push(message: str, stream_id: int = 0, device_index: int = 0, device_type: int = 0,
                       domain: str = "default") -> int:
    return _native_range_push_on_host(message, domain)


def _native_range_pop(domain: str = "default") -> int:
    stack = _stack(domain)
    if not stack:
        return -1
    depth = len(stack) - 1
    _exit(stack.pop())
    return depth


# torch_npu._C._mstx: its members are looked up at each call, so a replacement (a test's stub)
# takes effect.
native = types.ModuleType("torch_npu._C._mstx", "torch_npu's mstx bindings (npusim: profiler annotations)")
native._mark = _native_mark
native._mark_on_host = _native_mark_on_host
native._range_start = _native_range_start
native._range_start_on_host = _native_range_start_on_host
native._range_end = _native_range_end
native._range_push = _native_range_push
native._range_push_on_host = _native_range_push_on_host
native._range_pop = _native_range_pop


# ------------------------------------------------------------------ the Python API


def _no_exception(default=None):
    """torch_npu's markers never raise: a failure is logged and the default returned."""

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as error:
                print(f"[ERROR] Call {func.__name__} failed. Exception: {error}", file=sys.stderr)
                return default

        return wrapper

    return decorate


def _is_stream(stream) -> bool:
    from npusim.npu.streams import Stream

    return isinstance(stream, Stream)


@_no_exception()
def mark(message: str, stream=None, domain: str = "default") -> None:
    """An instant marker ``message`` (on ``stream``'s timeline when given)."""
    if not message or not isinstance(message, str):
        warnings.warn("Invalid message for mstx.mark function. Please provide a valid message string.")
        return
    if not isinstance(domain, str):
        warnings.warn("Invalid domain for mstx.mark function. Please provide a valid domain string.")
        return
    if stream:
        if not _is_stream(stream):
            warnings.warn("Invalid stream for mstx.mark function. Please provide a valid stream.")
            return
        native._mark(message, stream.stream_id, stream.device_index, stream.device_type, domain)
    else:
        native._mark_on_host(message, domain)


@_no_exception()
def range_push(message: str, stream=None, domain: str = "default") -> int:
    """Opens a nested range; returns its depth in ``domain`` (-1 for bad arguments)."""
    if not message or not isinstance(message, str):
        warnings.warn("Invalid message for mstx.range_push func. Please input valid message string.")
        return -1
    if not domain or not isinstance(domain, str):
        warnings.warn("Invalid domain for mstx.range_push func. Please input valid domain string.")
        return -1
    if stream:
        if not _is_stream(stream):
            warnings.warn("Invalid stream for mstx.range_push func. Please input valid stream.")
            return -1
        return native._range_push(message, stream.stream_id, stream.device_index, stream.device_type, domain)
    return native._range_push_on_host(message, domain)


@_no_exception()
def range_pop(domain: str = "default") -> int:
    """Closes the innermost range of ``domain``; returns its depth (-1 when none is open)."""
    if not domain or not isinstance(domain, str):
        warnings.warn("Invalid domain for mstx.range_pop func. Please input valid domain string.")
        return -1
    return native._range_pop(domain)


@_no_exception()
def range_start(message: str, stream=None, domain: str = "default") -> int:
    """Opens a range that ``range_end`` closes by the returned id (0 for bad arguments)."""
    if not message or not isinstance(message, str):
        warnings.warn("Invalid message for mstx.range_start function. Please provide a valid message string.")
        return 0
    if not domain or not isinstance(domain, str):
        warnings.warn("Invalid domain for mstx.range_start func. Please input valid domain string.")
        return 0
    if stream:
        if not _is_stream(stream):
            warnings.warn("Invalid stream for mstx.range_start func. Please input valid stream.")
            return 0
        return native._range_start(message, stream.stream_id, stream.device_index, stream.device_type, domain)
    return native._range_start_on_host(message, domain)


@_no_exception()
def range_end(range_id: int, domain: str = "default") -> None:
    """Closes the range ``range_start`` returned ``range_id`` for."""
    if not isinstance(range_id, int):
        warnings.warn(
            "Invalid message for mstx.range_end function. Please provide the return value from mstx.range_start."
        )
        return
    if not domain or not isinstance(domain, str):
        warnings.warn("Invalid domain for mstx.range_end func. Please input valid domain string.")
        return
    native._range_end(range_id, domain)


def mstx_range(message: str, stream=None, domain: str = "default"):
    """Decorator: runs the function inside a range ``message``."""

    def wrapper(func):
        @functools.wraps(func)
        def inner(*args, **kwargs):
            range_id = range_start(message, stream, domain)
            try:
                return func(*args, **kwargs)
            finally:
                range_end(range_id, domain)

        return inner

    return wrapper


class annotate:
    """Context manager and decorator: a range ``message`` (the function's name when empty)."""

    def __init__(self, message: str = "", stream=None, domain: str = "default"):
        self.message = message
        self.stream = stream
        self.domain = domain
        self.range_id = None

    def __enter__(self):
        self.range_id = range_start(self.message, self.stream, self.domain)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.range_id is not None:
            range_end(self.range_id, self.domain)
            self.range_id = None
        return False

    def __call__(self, func):
        if not self.message:
            self.message = func.__name__

        @functools.wraps(func)
        def inner(*args, **kwargs):
            range_id = range_start(self.message, self.stream, self.domain)
            try:
                return func(*args, **kwargs)
            finally:
                range_end(range_id, self.domain)

        return inner


class mstx:
    """torch_npu exposes the markers as static members of a class of this name."""

    mark = staticmethod(mark)
    range_start = staticmethod(range_start)
    range_end = staticmethod(range_end)
    range_push = staticmethod(range_push)
    range_pop = staticmethod(range_pop)
    mstx_range = staticmethod(mstx_range)
    annotate = annotate

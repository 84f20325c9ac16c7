"""``torch_npu.npu.mstx``: MindStudio Tools Extension markers. On npusim they are profiler
annotations: a mark is an instant range, a range a ``record_function`` span, so they show in the
trace and in the HTML report."""

from __future__ import annotations

import functools
import threading

import torch

_ranges: dict = {}
_stack = threading.local()
_next_id = [0]
_lock = threading.Lock()


def mark(message: str = "", stream=None, domain: str = "default") -> None:
    handle = torch.ops.profiler._record_function_enter_new(f"mstx::mark::{message}", None)
    torch.ops.profiler._record_function_exit._RecordFunction(handle)


def range_start(message: str = "", stream=None, domain: str = "default") -> int:
    handle = torch.ops.profiler._record_function_enter_new(f"mstx::{message}", None)
    with _lock:
        _next_id[0] += 1
        range_id = _next_id[0]
        _ranges[range_id] = handle
    return range_id


def range_end(range_id: int, domain: str = "default") -> None:
    with _lock:
        handle = _ranges.pop(range_id, None)
    if handle is None:
        raise ValueError(f"mstx.range_end: unknown range id {range_id}")
    torch.ops.profiler._record_function_exit._RecordFunction(handle)


def range_push(message: str = "", domain: str = "default") -> int:
    stack = getattr(_stack, "ids", None)
    if stack is None:
        stack = _stack.ids = []
    stack.append(range_start(message, domain=domain))
    return 0


def range_pop(domain: str = "default") -> int:
    stack = getattr(_stack, "ids", None)
    if not stack:
        return -1
    range_end(stack.pop(), domain)
    return 0


class mstx_range:
    """Decorator (and context manager) that wraps a function call in an mstx range."""

    def __init__(self, message: str = "", stream=None, domain: str = "default"):
        self.message, self.domain = message, domain
        self._id = None

    def __enter__(self):
        self._id = range_start(self.message, domain=self.domain)
        return self

    def __exit__(self, *exc):
        range_end(self._id, self.domain)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with mstx_range(self.message or fn.__qualname__, domain=self.domain):
                return fn(*args, **kwargs)

        return wrapper


class mstx:  # torch_npu also exposes the functions as static members of a class of that name
    mark = staticmethod(mark)
    range_start = staticmethod(range_start)
    range_end = staticmethod(range_end)
    range_push = staticmethod(range_push)
    range_pop = staticmethod(range_pop)
    mstx_range = mstx_range

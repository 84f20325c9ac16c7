"""Run-time side of the ``dynamic_shape`` analysis: the decorator that the instrumentation puts
on every function records the shapes of the tensors it receives and returns, and the report
``msft_dynamic_shape_analysis_report.csv`` is written when the program exits (to
``$NPUSIM_DYNAMIC_SHAPE_REPORT``, else the current folder).

A shape range reads ``x: [8, 16~128]``: dimension 0 was always 8, dimension 1 took values from
16 to 128 (a dynamic dimension: on the real stack each new shape may compile a new kernel or
graph). Tensors of several ranks list each rank. Only functions that saw a tensor are reported.
"""

from __future__ import annotations

import atexit
import csv
import functools
import inspect
import os
import threading

REPORT_NAME = "msft_dynamic_shape_analysis_report.csv"
REPORT_VARIABLE = "NPUSIM_DYNAMIC_SHAPE_REPORT"
COLUMNS = ["Function Name", "File Path", "Line Number", "Call Stack", "Input Shape Range", "Output Shape Range"]
_MAX_STACKS = 3

_lock = threading.Lock()
_local = threading.local()
_records: dict[tuple[str, int, str], "_Record"] = {}


class _Ranges:
    """Per name and rank: the min and max of every dimension."""

    def __init__(self) -> None:
        self.by_name: dict[str, dict[int, list[list[int]]]] = {}

    def add(self, name: str, shape: tuple[int, ...]) -> None:
        ranks = self.by_name.setdefault(name, {})
        bounds = ranks.get(len(shape))
        if bounds is None:
            ranks[len(shape)] = [[d, d] for d in shape]
            return
        for bound, size in zip(bounds, shape):
            bound[0] = min(bound[0], size)
            bound[1] = max(bound[1], size)

    def dynamic(self) -> bool:
        return any(len(r) > 1 or any(lo != hi for lo, hi in b) for r in self.by_name.values() for b in r.values())

    def text(self) -> str:
        parts = []
        for name, ranks in self.by_name.items():
            shapes = [
                "[" + ", ".join(str(lo) if lo == hi else f"{lo}~{hi}" for lo, hi in bounds) + "]"
                for _, bounds in sorted(ranks.items())
            ]
            parts.append(f"{name}: {' | '.join(shapes)}")
        return "; ".join(parts)


class _Record:
    def __init__(self) -> None:
        self.inputs = _Ranges()
        self.outputs = _Ranges()
        self.stacks: list[str] = []
        self.calls = 0


def _tensors(value, name: str, found: list, depth: int = 0) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        found.append((name, tuple(value.shape)))
    elif depth < 2 and isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:16]):
            _tensors(item, f"{name}[{index}]", found, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for key in list(value)[:16]:
            _tensors(value[key], f"{name}[{key!r}]", found, depth + 1)


_report_registered = False


def record(path: str, line: int):
    """Decorator for the function defined at ``path:line``; the first use arranges for the
    report to be written at exit (importing this module alone writes nothing)."""
    global _report_registered
    if not _report_registered:
        _report_registered = True
        atexit.register(write_report)

    def decorate(function):
        qualname = function.__qualname__
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None
        key = (path, line, qualname)

        @functools.wraps(function)
        def probe(*args, **kwargs):
            stack = getattr(_local, "stack", None)
            if stack is None:
                stack = _local.stack = []
            stack.append(qualname)
            try:
                result = function(*args, **kwargs)
            finally:
                stack.pop()
            found_in: list = []
            if signature is not None:
                try:
                    bound = signature.bind_partial(*args, **kwargs)
                    items = bound.arguments.items()
                except TypeError:
                    items = [(f"arg{i}", a) for i, a in enumerate(args)]
            else:
                items = [(f"arg{i}", a) for i, a in enumerate(args)]
            for name, value in items:
                if name != "self":
                    _tensors(value, name, found_in)
            found_out: list = []
            _tensors(result, "out", found_out)
            if found_in or found_out:
                with _lock:
                    entry = _records.get(key)
                    if entry is None:
                        entry = _records[key] = _Record()
                    entry.calls += 1
                    for name, shape in found_in:
                        entry.inputs.add(name, shape)
                    for name, shape in found_out:
                        entry.outputs.add(name, shape)
                    call_stack = " -> ".join(stack + [qualname])
                    if call_stack not in entry.stacks and len(entry.stacks) < _MAX_STACKS:
                        entry.stacks.append(call_stack)
            return result

        return probe

    return decorate


def write_report(path: str | None = None) -> str:
    path = path or os.environ.get(REPORT_VARIABLE) or os.path.join(os.getcwd(), REPORT_NAME)
    with _lock:
        items = sorted(_records.items(), key=lambda item: (item[0][0], item[0][1]))
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(COLUMNS)
        for (file_path, line, qualname), entry in items:
            writer.writerow(
                [qualname, file_path, line, " | ".join(entry.stacks), entry.inputs.text(), entry.outputs.text()]
            )
    return path


def dynamic_functions() -> list[str]:
    """Functions whose tensors changed shape between calls."""
    with _lock:
        return [q for (_, _, q), e in _records.items() if e.inputs.dynamic() or e.outputs.dynamic()]


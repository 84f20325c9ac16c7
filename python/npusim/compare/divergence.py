"""Which dumped calls diverge, how much, and which one diverges first.

Built on the compare table (:mod:`.compare_table`), per dumped call (an API, a module, forward or
backward, a parameter gradient):

- ``output_error``: the relative difference of its outputs: ``EucDist / Bench l2norm`` in tensor
  mode; in statistics mode the largest relative error of Max, Min and L2norm (Mean is left out:
  near zero its relative error says nothing). ``input_error`` likewise for its inputs.
- ``exact``: every matched value is identical (statistics equal, or MaxAbsErr 0 with the same
  dtype) and nothing is unmatched.
- ``diverging``: msprobe flags one of its outputs (``Result`` warning or error); or, in tensor
  mode, an output misses msprobe's accuracy standard (Cosine < 0.99 with MaxAbsErr > 0.001, or
  Cosine < 0.9, or MaxAbsErr > 1: ``CompareConst.COS_THRESHOLD`` and friends); or an output's
  dtype differs so that msprobe cannot match it (float32 against float64).

The first diverging operator is the first API call, in execution order, that diverges.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from .compare_table import CompareTable

__all__ = ["CallDivergence", "analyse", "first_diverging", "ranked_modules", "user_source_line"]

# msprobe's accuracy standard (CompareConst: COS_THRESHOLD, MAX_ABS_ERR_THRESHOLD, COS_MAX_THRESHOLD,
# MAX_ABS_ERR_MAX_THRESHOLD).
COS_THRESHOLD = 0.99
MAX_ABS_ERR_THRESHOLD = 0.001
COS_MAX_THRESHOLD = 0.9
MAX_ABS_ERR_MAX_THRESHOLD = 1.0


@dataclasses.dataclass
class CallDivergence:
    entry: str
    order: int
    kind: str  # "api", "module", "grad"
    direction: str  # "forward", "backward"
    result: str
    messages: list[str]
    output_error: float | None
    input_error: float | None
    exact: bool
    diverging: bool
    reasons: list[str]
    dtype_pairs: list[tuple[str, str]]
    stack: list[str] | None

    @property
    def prefix(self) -> str:
        return self.entry.split(".", 1)[0]

    @property
    def api(self) -> str:
        parts = self.entry.split(".")
        return ".".join(parts[1:-2]) if self.kind == "api" else ""

    @property
    def source(self) -> str | None:
        return user_source_line(self.stack)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text.endswith("%"):
        try:
            return float(text[:-1]) / 100
        except ValueError:
            return None
    if text.lower() in ("inf", "-inf"):
        return math.inf
    try:
        return float(text)
    except ValueError:
        return None


def _row_error(row: dict, mode: str) -> float | None:
    if row.get("Bench Name") in (None, "N/A"):
        return None
    if mode == "tensor":
        distance, norm = _number(row.get("EucDist")), _number(row.get("Bench l2norm"))
        if distance is not None and norm:
            return abs(distance / norm)
        absolute = _number(row.get("MaxAbsErr"))
        return abs(absolute) if absolute is not None else None
    values = [_number(row.get(column)) for column in ("MaxRelativeErr", "MinRelativeErr", "NormRelativeErr")]
    values = [abs(value) for value in values if value is not None]
    return max(values) if values else None


def _row_exact(row: dict, mode: str) -> bool:
    if row.get("Bench Name") in (None, "N/A"):
        return False
    if str(row.get("NPU Dtype")) != str(row.get("Bench Dtype")):
        return False
    if mode == "tensor":
        absolute = row.get("MaxAbsErr")
        if isinstance(absolute, (int, float)):
            return absolute == 0
        return all(row.get(f"NPU {s}") == row.get(f"Bench {s}") for s in ("max", "min", "mean", "l2norm"))
    return all(str(row.get(column)) == "0" for column in ("Max diff", "Min diff", "Mean diff", "L2norm diff"))


def _misses_standard(row: dict) -> bool:
    """msprobe's ``check_accuracy`` answers "No" (``N/A``: Inf or NaN at different places)."""
    if row.get("Cosine") == "N/A" or row.get("MaxAbsErr") == "N/A":
        return True
    cosine, absolute = _number(row.get("Cosine")), _number(row.get("MaxAbsErr"))
    if cosine is None or absolute is None:
        return False
    if cosine < COS_THRESHOLD and absolute > MAX_ABS_ERR_THRESHOLD:
        return True
    return cosine < COS_MAX_THRESHOLD or absolute > MAX_ABS_ERR_MAX_THRESHOLD


def _kind_and_direction(entry: str) -> tuple[str, str]:
    parts = entry.split(".")
    if "parameters_grad" in parts:
        return "grad", "backward"
    if parts[0] == "Module":
        return "module", parts[-2] if parts[-2] in ("forward", "backward") else "forward"
    return "api", parts[-1] if parts[-1] in ("forward", "backward") else "forward"


def analyse(table: CompareTable) -> list[CallDivergence]:
    calls = []
    for entry, rows in table.entries().items():
        kind, direction = _kind_and_direction(entry)
        outputs = [row for row in rows if row["_state"] in ("output", "parameters_grad")]
        inputs = [row for row in rows if row["_state"] not in ("output", "parameters_grad")]
        reasons = []
        result = "pass"
        messages: list[str] = []
        for row in rows:
            if row["Result"] == "error" or (row["Result"] == "warning" and result == "pass"):
                result = row["Result"]
        for row in outputs:
            if row["Result"] in ("warning", "error"):
                reasons.append(f"msprobe {row['Result']} on {row['NPU Name']}")
                messages.extend(m for m in _messages(row) if m not in messages)
            if table.mode == "tensor" and _misses_standard(row):
                reasons.append(f"{row['NPU Name']} misses msprobe's accuracy standard "
                               f"(Cosine {row.get('Cosine')}, MaxAbsErr {row.get('MaxAbsErr')})")
            if row.get("_bench_dtype"):
                reasons.append(f"{row['NPU Name']} is {row['NPU Dtype']} on the NPU and {row['_bench_dtype']} "
                               "on the benchmark (msprobe cannot match them)")
        dtype_pairs = sorted({(str(row["NPU Dtype"]), str(row.get("_bench_dtype") or row["Bench Dtype"]))
                              for row in outputs if row.get("_bench_dtype") or (
                                  row["Bench Name"] != "N/A" and row["NPU Dtype"] != row["Bench Dtype"])})
        output_errors = [e for e in (_row_error(row, table.mode) for row in outputs) if e is not None]
        input_errors = [e for e in (_row_error(row, table.mode) for row in inputs) if e is not None]
        matched = [row for row in rows if row.get("Bench Name") not in (None, "N/A") or row.get("_bench_dtype")]
        calls.append(CallDivergence(
            entry=entry, order=rows[0]["_order"], kind=kind, direction=direction, result=result, messages=messages,
            output_error=max(output_errors) if output_errors else None,
            input_error=max(input_errors) if input_errors else None,
            exact=bool(matched) and all(_row_exact(row, table.mode) for row in matched),
            diverging=bool(reasons), reasons=reasons, dtype_pairs=dtype_pairs,
            stack=rows[0].get("NPU_Stack_Info") if isinstance(rows[0].get("NPU_Stack_Info"), list) else None))
    return calls


def _messages(row: dict) -> list[str]:
    import json

    try:
        value = json.loads(row.get("Err_message") or "[]")
    except ValueError:
        return [str(row.get("Err_message"))]
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def first_diverging(calls: list[CallDivergence]) -> CallDivergence | None:
    apis = [call for call in calls if call.kind == "api" and call.diverging]
    return min(apis, key=lambda call: call.order) if apis else None


def ranked_modules(calls: list[CallDivergence], limit: int = 20) -> list[CallDivergence]:
    """The modules' forward calls with the largest output difference first."""
    modules = [call for call in calls if call.kind == "module" and call.direction == "forward"
               and call.output_error is not None]
    return sorted(modules, key=lambda call: (-call.output_error, call.order))[:limit]


def user_source_line(stack: list[str] | None) -> str | None:
    """The innermost stack.json frame outside torch and npusim: ``file:line  source``."""
    if not stack:
        return None
    import torch

    library = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.dirname(__file__)) + os.sep)
    for line in stack:
        # "File {path}, line {n}, in {function}, \n {source}"
        if not line.startswith("File "):
            continue
        head, _, source = line.partition("\n")
        path, _, rest = head[5:].partition(", line ")
        if os.path.abspath(path).startswith(library):
            continue
        number = rest.split(",", 1)[0]
        shown = os.path.relpath(path) if os.path.abspath(path).startswith(os.getcwd() + os.sep) else path
        return f"{shown}:{number}  {source.strip()}"
    return None

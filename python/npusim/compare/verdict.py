"""msprobe's ``Result`` (pass / warning / error) and ``Err_message`` of each compare row
(msprobe 26.0.0, ``core/compare/indicator_analysis``).

The rows of one API or module call are judged together: its output rows (``.output.`` in the
NPU name) against its input rows (inputs, keyword inputs, parameters). Every row starts as
``pass``; each rule may raise a row to ``warning`` or ``error`` and add its message:

- both modes: a NaN/Inf in the NPU's Max or Min that the benchmark does not have (error); a
  different ``requires_grad`` (error); a scalar argument whose value differs (error); a different
  dtype (error; msprobe skips fused ``qkv`` / ``gate_up`` names); a different shape (error);
- statistics mode: inputs within 10% (NormRelativeErr) but an output off by more than 50%
  (error); an output's NormRelativeErr more than 10 times its inputs' (or above 10% with exact
  inputs) (warning, on the first output row);
- tensor mode: inputs with more than 90% of elements within 0.1% but outputs with less than 10%
  (error); input Cosine above 0.9 and more than 0.1 above the output's (warning).

APIs that only move or allocate (``to``, ``empty``, ``__setitem__``, ...) are not judged. The
message column holds the JSON list of messages, as msprobe writes it.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["judge_rows", "PASS", "WARNING", "ERROR"]

PASS, WARNING, ERROR = "pass", "warning", "error"
_ORDER = {PASS: 0, WARNING: 1, ERROR: 2}
_IGNORE_ALL = {"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format", "new_empty_strided",
               "new_empty", "empty_strided"}
_IGNORE_INPUTS = {"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"}
N_A = "N/A"


def _percentage(value: Any) -> float:
    try:
        return float(str(value).strip("%")) / 100
    except (ValueError, AttributeError):
        return 0.0


def _inf_or_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    if isinstance(value, str):
        return value.strip().lower() in ("inf", "-inf", "nan")
    return False


def _extreme(rows: list[dict], column: str, is_min: bool) -> float:
    """msprobe's ``get_min_or_max_value``: numbers and percentages only, from a default of 1.0
    (minimum) or 0.0 (maximum)."""
    result = 1.0 if is_min else 0.0
    for row in rows:
        value = row.get(column)
        if value is None or value in ("Nan", N_A):
            continue
        if isinstance(value, str):
            if not value.endswith("%"):
                continue
            value = _percentage(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        result = min(result, value) if is_min else max(result, value)
    return result


class _Judgement:
    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows
        self.levels = {id(row): PASS for row in rows}
        self.messages: dict[int, list[str]] = {id(row): [] for row in rows}
        self.outputs = [row for row in rows if ".output." in str(row["NPU Name"])]
        self.inputs = [row for row in rows if ".output." not in str(row["NPU Name"])]

    def mark(self, row: dict, level: str, message: str) -> None:
        if _ORDER[level] > _ORDER[self.levels[id(row)]]:
            self.levels[id(row)] = level
        self.messages[id(row)].append(message)


def _matched(row: dict) -> bool:
    name = row.get("Bench Name")
    return bool(name) and name != N_A


def judge_rows(rows: list[dict], mode: str) -> None:
    """Sets ``Result`` and ``Err_message`` of the rows of one call; ``mode`` is ``statistics``
    or ``tensor``."""
    if not rows:
        return
    judgement = _Judgement(rows)
    ignore = "none"
    if judgement.inputs:
        parts = str(judgement.inputs[0]["NPU Name"]).split(".")
        if len(parts) >= 2:
            if parts[1] in _IGNORE_ALL:
                ignore = "all"
            elif parts[1] in _IGNORE_INPUTS:
                ignore = "inputs"
    judged = [] if ignore == "all" else (judgement.outputs if ignore == "inputs" else judgement.inputs + judgement.outputs)

    for row in judged:
        if _inf_or_nan(row.get("Bench max")) or _inf_or_nan(row.get("Bench min")):
            continue
        if _inf_or_nan(row.get("NPU max")) or _inf_or_nan(row.get("NPU min")):
            judgement.mark(row, ERROR, "error: There is nan/inf/-inf in the maximum or minimum value of NPU.")
    if mode == "statistics" and ignore == "none":
        if abs(_extreme(judgement.inputs, "NormRelativeErr", is_min=False)) < 0.1:
            for row in judgement.outputs:
                if abs(_percentage(row.get("NormRelativeErr"))) > 0.5:
                    judgement.mark(row, ERROR, "error: The NormRelativeErr of output is greater than 0.5.")
    if mode == "tensor" and ignore == "none" and judgement.outputs:
        minimum_in = _extreme(judgement.inputs, "One Thousandth Err Ratio", is_min=True)
        minimum_out = _extreme(judgement.outputs, "One Thousandth Err Ratio", is_min=True)
        if minimum_in > 0.9 and minimum_out < 0.1:
            judgement.mark(judgement.outputs[0], ERROR,
                           "error: The input/parameters of One Thousandth Err Ratio > 0.9 while the output < 0.6.")
    for row in judged:
        if not _matched(row):
            continue
        npu_flag, bench_flag = row.get("NPU Requires_grad"), row.get("Bench Requires_grad")
        if npu_flag and bench_flag and npu_flag != bench_flag:
            judgement.mark(row, ERROR, "error: The Required_Grad of NPU and Bench are inconsistent")
    if ignore == "none":
        for row in judgement.inputs:
            if not _matched(row):
                continue
            npu_dtype, bench_dtype = str(row.get("NPU Dtype") or ""), str(row.get("Bench Dtype") or "")
            if "class" not in npu_dtype or "class" not in bench_dtype or str(row.get("NPU Tensor Shape")) != "[]":
                continue
            if row.get("NPU max") != row.get("Bench max"):
                judgement.mark(row, ERROR, "error: The scalar parameters of NPU and Bench are inconsistent.")
    for row in judged:
        if not _matched(row) or row.get("NPU Name") == N_A:
            continue
        bench_name = str(row.get("Bench Name"))
        if "qkv" in bench_name or "gate_up" in bench_name:
            continue
        if row.get("NPU Dtype") and row.get("Bench Dtype") and row["NPU Dtype"] != row["Bench Dtype"]:
            judgement.mark(row, ERROR, "error: The dtype of NPU and Bench are inconsistent.")
    for row in judged:
        if not _matched(row) or row.get("NPU Tensor Shape") is None or row.get("Bench Tensor Shape") is None:
            continue
        if row["NPU Tensor Shape"] != row["Bench Tensor Shape"]:
            judgement.mark(row, ERROR, "error: The shape of NPU and Bench are inconsistent.")
    if mode == "statistics" and ignore == "none" and judgement.outputs:
        relative_in = abs(_extreme(judgement.inputs, "NormRelativeErr", is_min=False))
        relative_out = abs(_extreme(judgement.outputs, "NormRelativeErr", is_min=False))
        if (relative_in == 0 and relative_out > 0.1) or (relative_in != 0 and relative_out / relative_in > 10):
            judgement.mark(judgement.outputs[0], WARNING,
                           "warning: The norm relative error of output is 10 times that of input.")
    if mode == "tensor" and ignore == "none" and judgement.outputs:
        minimum_in = _extreme(judgement.inputs, "Cosine", is_min=True)
        minimum_out = _extreme(judgement.outputs, "Cosine", is_min=True)
        if minimum_in > 0.9 and minimum_in - minimum_out > 0.1:
            judgement.mark(judgement.outputs[0], WARNING,
                           "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1")
    for row in rows:
        row["Result"] = judgement.levels[id(row)]
        row["Err_message"] = json.dumps(judgement.messages[id(row)])

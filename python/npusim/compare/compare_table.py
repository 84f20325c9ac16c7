"""msprobe's compare: two dump.json files become the rows of ``compare_result_*.csv``
(msprobe 26.0.0, ``core/compare/acc_compare.py``, ``utils.py``).

Each value of each entry becomes a row named ``{entry}.input.{i}`` / ``.input.{keyword}`` /
``.output.{i}`` / ``.parameters.{name}`` (and ``{module}.parameters_grad.{n}.{name}``), inputs
first, then parameters, then outputs. NPU rows are matched to benchmark rows of the same name;
float16, bfloat16 and float32 match each other, other dtype pairs (float32 against float64) do
not ("No bench data matched"). The columns are msprobe's, in its order:

- statistics mode (task ``statistics``): ``NPU Name, Bench Name, NPU Dtype, Bench Dtype, NPU
  Tensor Shape, Bench Tensor Shape, NPU Requires_grad, Bench Requires_grad, Max diff, Min diff,
  Mean diff, L2norm diff, MaxRelativeErr, MinRelativeErr, MeanRelativeErr, NormRelativeErr, NPU
  max, NPU min, NPU mean, NPU l2norm, Bench max, Bench min, Bench mean, Bench l2norm,
  Requires_grad Consistent, Result, Err_message`` and ``NPU_Stack_Info`` (with a stack.json);
- tensor mode (task ``tensor``): the same with ``Cosine, EucDist, MaxAbsErr, MaxRelativeErr, One
  Thousandth Err Ratio, Five Thousandths Err Ratio`` in place of the eight differences, and
  ``Data_name`` (the pair of tensor files) last.

Files: ``compare_result{suffix}_{YYYYmmddHHMMSS}.csv``, and the same table as ``.xlsx`` when
openpyxl is installed.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from typing import Any

import torch

from .metrics import N_A, NAN, compare_tensors, statistic_difference
from .verdict import judge_rows

__all__ = ["CompareTable", "compare_dumps", "parse_dump", "write_table", "header_for", "BASIC_COLUMNS",
           "STATISTICS_COLUMNS", "TENSOR_COLUMNS", "SUMMARY_COLUMNS"]

BASIC_COLUMNS = ["NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
                 "NPU Requires_grad", "Bench Requires_grad"]
TENSOR_COLUMNS = ["Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
                  "Five Thousandths Err Ratio"]
STATISTICS_COLUMNS = ["Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
                      "MeanRelativeErr", "NormRelativeErr"]
SUMMARY_COLUMNS = ["NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean",
                   "Bench l2norm"]
_TAIL = ["Requires_grad Consistent", "Result", "Err_message"]
_STATISTICS = ["Max", "Min", "Mean", "Norm"]
_IO_SUFFIX = {"input_args": ".input", "input_kwargs": ".input", "input": ".input", "output": ".output",
              "parameters": ".parameters"}
_FLOAT_GROUP = {"torch.float16", "torch.float32", "torch.bfloat16"}


def header_for(mode: str, stack: bool) -> list[str]:
    columns = BASIC_COLUMNS + (TENSOR_COLUMNS if mode == "tensor" else STATISTICS_COLUMNS) + SUMMARY_COLUMNS + _TAIL
    if stack:
        columns.append("NPU_Stack_Info")
    if mode == "tensor":
        columns.append("Data_name")
    return columns


# ---------------------------------------------------------------------------------------------
# Parsing a dump.json into rows


def _leaf_item(data: dict, name: str, state: str) -> dict[str, Any]:
    item = {key: (str(value) if isinstance(value, bool) else value) for key, value in data.items()}
    data_name = data.get("data_name") or "-1"
    item["data_name"] = data_name
    item["full_op_name"] = data_name.rsplit(".", 1)[0] if data_name != "-1" else name
    item["state"] = state
    item.setdefault("requires_grad", None)
    for statistic in _STATISTICS:
        item.setdefault(statistic, None)
    if not item.get("dtype"):
        kind = data.get("type")
        value = data.get("value")
        if kind == "torch.Size":
            item["dtype"], item["shape"] = "torch.Size", str(value)
        elif kind == "slice":
            item["dtype"], item["shape"] = "slice", f"({len(value) if isinstance(value, list) else 0},)"
        elif kind == "ellipsis":
            item["dtype"], item["shape"] = "ellipsis", "[]"
            for statistic in _STATISTICS:
                item[statistic] = value
        else:
            item["dtype"], item["shape"] = str(type(value)), "[]"
            for statistic in _STATISTICS:
                item[statistic] = value
    return item


def _parse_value(data: Any, name: str, state: str, depth: int = 0) -> list[dict]:
    if state in ("input_args", "input_kwargs"):
        state = "input"
    if depth > 400:
        return []
    if data is None:
        return [{"full_op_name": name, "type": None, "Max": None, "Min": None, "Mean": None, "Norm": None,
                 "dtype": None, "shape": None, "value": None, "data_name": "-1", "state": state,
                 "requires_grad": None}]
    if not data:
        return []
    items: list[dict] = []
    if isinstance(data, list):
        grads = "parameters_grad" in name.split(".")
        for index, element in enumerate(data):
            items.extend(_parse_value(element, name if grads else f"{name}.{index}", state, depth + 1))
    elif isinstance(data, dict):
        if "type" in data and isinstance(data["type"], str):
            return [_leaf_item(data, name, state)]
        for key, element in data.items():
            items.extend(_parse_value(element, f"{name}.{key}", state, depth + 1))
    return items


def _entry_items(entry: dict, name: str) -> list[dict]:
    parts = name.split(".")
    if parts[-1] == "parameters_grad" or (len(parts) >= 2 and parts[-2] == "parameters_grad"):
        return _parse_value(entry, name, "parameters_grad")
    items: list[dict] = []
    for key, suffix in _IO_SUFFIX.items():
        if key in entry:
            items.extend(_parse_value(entry[key], name + suffix, key))
    # msprobe's order: inputs, then parameters, then outputs, then parameter gradients.
    order = {"input": 0, "parameters": 1, "output": 2, "parameters_grad": 3}
    return sorted(items, key=lambda item: order.get(item["state"], 0))


def _load_stack(path: str | None) -> dict[str, list[str]]:
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        return {}
    if "0" not in data:
        return data
    result = {}
    for value in data.values():
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], list):
            for api in value[0]:
                result[api] = value[1]
    return result


def parse_dump(dump_json: str, stack: dict[str, list[str]] | None = None) -> tuple[str, list[dict]]:
    """(task, rows) of a dump.json: one row per value, with its entry's name (``entry``) and
    position in the dump (``order``)."""
    with open(dump_json, encoding="utf-8") as handle:
        dump = json.load(handle)
    rows: list[dict] = []
    for name, entry in (dump.get("data") or {}).items():
        if not isinstance(entry, dict):
            continue
        items = _entry_items(entry, name)
        for index, item in enumerate(items):
            item["entry"] = name
            item["stack"] = (stack or {}).get(name) if index == 0 else None
            item["order"] = len(rows)
            rows.append(item)
    return dump.get("task", "statistics"), rows


# ---------------------------------------------------------------------------------------------
# The table


def _summary(item: dict | None) -> list[Any]:
    if item is None:
        return [N_A] * 4
    values = []
    for statistic in _STATISTICS:
        value = item.get(statistic)
        if value is None:
            values.append("None")
        elif str(value).lower() == "nan":
            values.append(NAN)
        else:
            values.append(value)
    return values


def _dtype_matches(npu: Any, bench: Any) -> bool:
    return str(npu) == str(bench) or (str(npu) in _FLOAT_GROUP and str(bench) in _FLOAT_GROUP)


def _load_tensor(directory: str | None, name: str) -> torch.Tensor:
    if not directory:
        raise FileNotFoundError(name)
    return torch.load(os.path.join(directory, name), map_location="cpu", weights_only=True)


class CompareTable:
    """The compare rows of one NPU dump against one benchmark dump."""

    def __init__(self, mode: str, rows: list[dict], stack: bool) -> None:
        self.mode = mode
        self.rows = rows
        self.stack = stack

    @property
    def header(self) -> list[str]:
        return header_for(self.mode, self.stack)

    def entries(self) -> dict[str, list[dict]]:
        """The rows of each dumped call, in dump order."""
        grouped: dict[str, list[dict]] = {}
        for row in self.rows:
            grouped.setdefault(row["_entry"], []).append(row)
        return grouped


def compare_dumps(npu_dump: str, bench_dump: str) -> CompareTable:
    """Compares two rank folders (or two dump.json files) as msprobe's ``compare`` does."""
    npu_json = npu_dump if npu_dump.endswith(".json") else os.path.join(npu_dump, "dump.json")
    bench_json = bench_dump if bench_dump.endswith(".json") else os.path.join(bench_dump, "dump.json")
    stack_path = os.path.join(os.path.dirname(npu_json), "stack.json")
    stack = _load_stack(stack_path)
    npu_task, npu_items = parse_dump(npu_json, stack)
    bench_task, bench_items = parse_dump(bench_json)
    if npu_task != bench_task:
        raise ValueError(f"the two dumps are of different tasks ({npu_task} and {bench_task}): compare needs the same")
    mode = "tensor" if npu_task == "tensor" else "statistics"
    npu_data_dir = os.path.join(os.path.dirname(npu_json), "dump_tensor_data")
    bench_data_dir = os.path.join(os.path.dirname(bench_json), "dump_tensor_data")
    bench_by_name = {}
    for item in bench_items:
        bench_by_name.setdefault(item["full_op_name"], item)
    rows = []
    for item in npu_items:
        bench = bench_by_name.get(item["full_op_name"])
        unmatched_dtype = None
        if bench is not None and not _dtype_matches(item.get("dtype"), bench.get("dtype")):
            # msprobe leaves such a pair unmatched; npusim's analysis still wants to know why.
            unmatched_dtype = str(bench.get("dtype"))
            bench = None
        row = _make_row(item, bench, mode, npu_data_dir, bench_data_dir, bool(stack))
        row["_bench_dtype"] = unmatched_dtype
        rows.append(row)
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(row["_entry"], []).append(row)
    for entry_rows in grouped.values():
        judge_rows(entry_rows, mode)
    return CompareTable(mode, rows, bool(stack))


def _or_na(value: Any) -> Any:
    return N_A if value is None else value


def _shape_text(value: Any) -> str:
    return str(value) if value is not None else "None"


def _make_row(item: dict, bench: dict | None, mode: str, npu_dir: str, bench_dir: str, stack: bool) -> dict:
    row: dict[str, Any] = {
        "NPU Name": item["full_op_name"],
        "Bench Name": bench["full_op_name"] if bench else N_A,
        "NPU Dtype": str(item.get("dtype")),
        "Bench Dtype": str(bench.get("dtype")) if bench else N_A,
        "NPU Tensor Shape": _shape_text(item.get("shape")),
        "Bench Tensor Shape": _shape_text(bench.get("shape")) if bench else N_A,
        # msprobe fills empty cells of the matched table with N/A.
        "NPU Requires_grad": _or_na(item.get("requires_grad")),
        "Bench Requires_grad": _or_na(bench.get("requires_grad")) if bench else N_A,
    }
    npu_summary, bench_summary = _summary(item), _summary(bench)
    for column, value in zip(SUMMARY_COLUMNS, npu_summary + bench_summary):
        row[column] = value
    if mode == "tensor":
        row.update(_tensor_metrics(item, bench, npu_dir, bench_dir))
    else:
        for statistic, diff_column, relative_column in zip(("max", "min", "mean", "l2norm"), STATISTICS_COLUMNS[:4],
                                                           STATISTICS_COLUMNS[4:]):
            if bench is None:
                row[diff_column] = row[relative_column] = N_A
            else:
                row[diff_column], row[relative_column] = statistic_difference(row[f"NPU {statistic}"],
                                                                              row[f"Bench {statistic}"])
    row["Requires_grad Consistent"] = row["NPU Requires_grad"] == row["Bench Requires_grad"]
    row["Result"] = ""
    row["Err_message"] = "" if bench else "No bench data matched."
    if stack:
        row["NPU_Stack_Info"] = _or_na(item.get("stack"))
    if mode == "tensor":
        row["Data_name"] = [item.get("data_name", "-1"), bench.get("data_name", "-1") if bench else N_A]
    row["_entry"] = item["entry"]
    row["_state"] = item["state"]
    row["_order"] = item["order"]
    return row


def _tensor_metrics(item: dict, bench: dict | None, npu_dir: str, bench_dir: str) -> dict[str, Any]:
    npu_name = item.get("data_name", "-1")
    bench_name = bench.get("data_name", "-1") if bench else N_A
    error = None
    if str(npu_name) == "-1":
        error = "NPU does not have data file."
    elif str(bench_name) == "-1":
        error = "Bench does not have data file."
    elif (npu_name == N_A) != (bench_name == N_A):
        error = "Bench api/module unmatched."
    npu_tensor = bench_tensor = None
    if error is None:
        try:
            npu_tensor = _load_tensor(npu_dir, npu_name)
            bench_tensor = _load_tensor(bench_dir, bench_name)
        except (OSError, RuntimeError) as failure:
            error = f"Dump file: {npu_name} or {bench_name} not found or read failed. ({failure})"
    metrics = compare_tensors(npu_tensor, bench_tensor, error)
    return dict(zip(TENSOR_COLUMNS, list(metrics)[:6]))


# ---------------------------------------------------------------------------------------------
# Writing


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        if value == math.inf:
            return " inf"
        if value == -math.inf:
            return " -inf"
        if math.isnan(value):
            return ""
        return repr(value)
    if isinstance(value, (list, tuple)):
        return str(list(value))
    return str(value)


def write_table(table: CompareTable, output_dir: str, suffix: str = "", timestamp: str | None = None) -> list[str]:
    """Writes ``compare_result{suffix}_{timestamp}.csv`` (and ``.xlsx`` with openpyxl); returns
    the paths."""
    os.makedirs(output_dir, exist_ok=True)
    stamp = timestamp or time.strftime("%Y%m%d%H%M%S", time.localtime())
    base = os.path.join(output_dir, f"compare_result{suffix}_{stamp}")
    header = table.header
    paths = [base + ".csv"]
    with open(paths[0], "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in table.rows:
            writer.writerow([_cell(row.get(column)) for column in header])
    try:
        import openpyxl
    except ImportError:
        return paths
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Sheet1"
    sheet.append(header)
    for row in table.rows:
        cells = []
        for column in header:
            value = row.get(column)
            if isinstance(value, (list, tuple)):
                value = str(list(value))
            elif isinstance(value, float) and not math.isfinite(value):
                value = str(value)
            cells.append(value)
        sheet.append(cells)
    workbook.save(base + ".xlsx")
    paths.append(base + ".xlsx")
    return paths

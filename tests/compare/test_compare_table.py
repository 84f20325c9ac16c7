"""msprobe's compare table on small hand-made dumps: the columns (names and order) of statistics
and tensor mode and every value of a row computed by hand: the statistics differences and
relative errors, Cosine / EucDist / MaxAbsErr / MaxRelativeErr / the error ratios, and the
pass / warning / error verdicts with their messages."""

from __future__ import annotations

import csv
import json
import math
import os

import pytest
import torch

from npusim.compare.compare_table import compare_dumps, write_table
from npusim.compare.metrics import compare_tensors, statistic_difference

STATISTICS_HEADER = [
    "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
    "NPU Requires_grad", "Bench Requires_grad", "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "NPU max", "NPU min", "NPU mean",
    "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm", "Requires_grad Consistent", "Result",
    "Err_message"]
TENSOR_HEADER = [
    "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
    "NPU Requires_grad", "Bench Requires_grad", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
    "One Thousandth Err Ratio", "Five Thousandths Err Ratio", "NPU max", "NPU min", "NPU mean", "NPU l2norm",
    "Bench max", "Bench min", "Bench mean", "Bench l2norm", "Requires_grad Consistent", "Result", "Err_message",
    "Data_name"]


def _tensor(dtype, maximum, minimum, mean, norm, data_name=None, shape=(2, 3)):
    record = {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": maximum, "Min": minimum,
              "Mean": mean, "Norm": norm, "requires_grad": False}
    if data_name:
        record["data_name"] = data_name
    return record


def _write(folder, task, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "dump.json"), "w") as handle:
        json.dump({"task": task, "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data}, handle)
    return str(folder)


def _read_csv(path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


def test_statistics_mode_by_hand(tmp_path):
    npu = _write(tmp_path / "npu", "statistics", {
        "Functional.linear.0.forward": {
            "input_args": [_tensor("torch.float32", 1.0, -1.0, 0.5, 2.0), {"type": "int", "value": 3}],
            "input_kwargs": {},
            "output": [_tensor("torch.float16", 3.0, -2.0, 0.25, 5.0)]},
        "Tensor.add.0.forward": {"input_args": [_tensor("torch.float32", 1.0, 1.0, 1.0, 1.0)], "input_kwargs": {},
                                 "output": [_tensor("torch.float32", 2.0, 2.0, 2.0, 2.0)]},
    })
    bench = _write(tmp_path / "bench", "statistics", {
        "Functional.linear.0.forward": {
            "input_args": [_tensor("torch.float32", 1.0, -1.0, 0.5, 2.0), {"type": "int", "value": 3}],
            "input_kwargs": {},
            "output": [_tensor("torch.float32", 2.0, -2.0, 0.5, 4.0)]},
    })
    table = compare_dumps(npu, bench)
    path = write_table(table, str(tmp_path / "out"), "_step0", "20260101000000")[0]
    assert os.path.basename(path) == "compare_result_step0_20260101000000.csv"
    header, rows = _read_csv(path)
    assert header == STATISTICS_HEADER
    assert [row["NPU Name"] for row in rows] == [
        "Functional.linear.0.forward.input.0", "Functional.linear.0.forward.input.1",
        "Functional.linear.0.forward.output.0", "Tensor.add.0.forward.input.0", "Tensor.add.0.forward.output.0"]
    tensor_in, scalar, output, unmatched, _ = rows
    assert [tensor_in[c] for c in STATISTICS_HEADER[8:16]] == ["0"] * 8
    assert (tensor_in["NPU Requires_grad"], tensor_in["Requires_grad Consistent"], tensor_in["Result"],
            tensor_in["Err_message"]) == ("False", "True", "pass", "[]")
    assert (scalar["NPU Dtype"], scalar["NPU Tensor Shape"], scalar["NPU max"], scalar["NPU Requires_grad"]) == (
        "<class 'int'>", "[]", "3", "N/A")
    # output: 3 vs 2, -2 vs -2, 0.25 vs 0.5, 5 vs 4
    assert (output["Max diff"], output["Min diff"], output["Mean diff"], output["L2norm diff"]) == (
        "1.0", "0", "-0.25", "1.0")
    assert (output["MaxRelativeErr"], output["MinRelativeErr"], output["MeanRelativeErr"],
            output["NormRelativeErr"]) == ("50.0%", "0", "50.0%", "25.0%")
    assert output["Result"] == "error"
    # float16 against float32 is a dtype error; an output norm 25% off with exact inputs a warning.
    assert json.loads(output["Err_message"]) == ["error: The dtype of NPU and Bench are inconsistent.",
                                                 "warning: The norm relative error of output is 10 times that of input."]
    assert (unmatched["Bench Name"], unmatched["Bench Dtype"], unmatched["Bench max"], unmatched["Max diff"],
            unmatched["Requires_grad Consistent"], unmatched["Result"]) == ("N/A", "N/A", "N/A", "N/A", "False",
                                                                             "pass")


def test_tensor_mode_by_hand(tmp_path):
    for side, values in (("npu", [1.0, 2.0, 3.0, 4.0]), ("bench", [1.0, 2.0, 3.0, 5.0])):
        data_dir = tmp_path / side / "dump_tensor_data"
        os.makedirs(data_dir)
        torch.save(torch.tensor([0.5, 0.25]), data_dir / "Tensor.mul.0.forward.input.0.pt")
        torch.save(torch.tensor(values), data_dir / "Tensor.mul.0.forward.output.0.pt")
        _write(tmp_path / side, "tensor", {"Tensor.mul.0.forward": {
            "input_args": [_tensor("torch.float32", 0.5, 0.25, 0.375, 0.559, "Tensor.mul.0.forward.input.0.pt", (2,)),
                           {"type": "float", "value": 2.0}],
            "input_kwargs": {},
            "output": [_tensor("torch.float32", max(values), 1.0, sum(values) / 4, 5.0,
                               "Tensor.mul.0.forward.output.0.pt", (4,))]}})
    table = compare_dumps(str(tmp_path / "npu"), str(tmp_path / "bench"))
    path = write_table(table, str(tmp_path / "out"), "", "20260101000000")[0]
    header, rows = _read_csv(path)
    assert header == TENSOR_HEADER
    tensor_in, scalar, output = rows
    assert (tensor_in["Cosine"], tensor_in["EucDist"], tensor_in["MaxAbsErr"], tensor_in["MaxRelativeErr"],
            tensor_in["One Thousandth Err Ratio"], tensor_in["Five Thousandths Err Ratio"]) == (
        "1.0", "0.0", "0.0", "0.0", "1.0", "1.0")
    assert scalar["Cosine"] == "unsupported"  # no data file for a Python number
    # n = [1, 2, 3, 4], b = [1, 2, 3, 5]
    cosine = 34 / math.sqrt(30 * 39)
    assert float(output["Cosine"]) == float(f"{cosine:.12f}")
    assert (output["EucDist"], output["MaxAbsErr"]) == ("1.0", "1.0")
    # |4 - 5| / 5 in float32, kept to 12 decimals
    assert float(output["MaxRelativeErr"]) == float(f"{float(torch.tensor(0.2)):.12f}")
    assert (output["One Thousandth Err Ratio"], output["Five Thousandths Err Ratio"]) == ("0.75", "0.75")
    assert output["Result"] == "pass" and output["Err_message"] == "[]"
    assert output["Data_name"] == str(["Tensor.mul.0.forward.output.0.pt"] * 2)


def test_metric_edge_cases():
    metrics = compare_tensors(torch.tensor([1.0, float("inf"), 2.0]), torch.tensor([1.0, float("inf"), 2.0]))
    assert (metrics.cosine, metrics.max_abs_error) == (1.0, 0.0)  # Inf at the same place counts as equal
    metrics = compare_tensors(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 2.0]))
    assert metrics.cosine == "N/A" and "do not match" in metrics.message
    metrics = compare_tensors(torch.ones(2, 3), torch.ones(3, 2))
    assert metrics.cosine == "shape unmatched"
    metrics = compare_tensors(torch.tensor(2.0), torch.tensor(1.0))
    assert (metrics.cosine, metrics.euclidean, metrics.max_abs_error) == ("unsupported", "unsupported", 1.0)
    assert statistic_difference(1.0, 0.0) == ("1.0", "inf")
    assert statistic_difference(1.0, float("inf")) == ("-inf", "-inf")
    assert statistic_difference("nan", 1.0) == ("Nan", "Nan")
    assert statistic_difference("npu:0", "npu:0") == ("0", "0")
    assert statistic_difference(True, False) == ("Diff", "Diff")


def test_xlsx_when_openpyxl_is_installed(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    npu = _write(tmp_path / "npu", "statistics", {"Tensor.add.0.forward": {
        "input_args": [_tensor("torch.float32", 1.0, 1.0, 1.0, 1.0)], "input_kwargs": {},
        "output": [_tensor("torch.float32", 2.0, 2.0, 2.0, 2.0)]}})
    paths = write_table(compare_dumps(npu, npu), str(tmp_path / "out"), "", "20260101000000")
    assert paths[1].endswith("compare_result_20260101000000.xlsx")
    sheet = openpyxl.load_workbook(paths[1]).active
    assert [cell.value for cell in sheet[1]] == STATISTICS_HEADER

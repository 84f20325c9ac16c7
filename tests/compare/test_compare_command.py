"""``npusim compare`` end to end (each test runs the program twice in subprocesses, a few seconds
each):

- golden: the GPT example in fp32 (HF32 off, torch_npu's default for matmul) matches the CPU
  benchmark bit for bit, every value of every call in msprobe's table;
- golden: the GPT example with fp16 autocast: the first operator beyond msprobe's thresholds is
  the first autocast matmul (the attention's qkv projection), and the re-run names autocast;
- each numerics rule on its own operator (programs/numerics_rules.py): HF32, the float64 rule,
  saturation mode and torch_npu's fused attention are each named for their operator.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from npusim_testing.fresh_process import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "examples" / "gpt_transformer.py"
PROGRAMS = Path(__file__).resolve().parent / "programs"


def _env(**extra):
    return subprocess_env(extra)


def _compare(tmp_path, *arguments, env=None):
    output = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "npusim", "compare", "--output", str(output), *arguments],
                         capture_output=True, text=True, timeout=600, env=env or _env(), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-4000:]
    return output, run.stderr


def _rows(output, step=0):
    (path,) = glob.glob(str(output / f"compare_result_step{step}_*.csv"))
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _explanations(output):
    return {item["entry"]: item for item in json.loads((output / "explanations.json").read_text())}


def test_gpt_fp32_matches_bit_for_bit(tmp_path):
    output, log = _compare(tmp_path, "--steps", "1", str(GPT), "--steps", "3")
    assert "every dumped value matches the CPU benchmark bit for bit" in log
    (npu_rank,) = glob.glob(str(output / "npu_dump" / "step0" / "proc*"))
    assert sorted(os.listdir(npu_rank)) == ["construct.json", "dump.json", "npusim_numerics.json", "stack.json"]
    assert not os.path.exists(output / "npu_dump" / "step1"), "--steps 1 stops the program after its first step"
    rows = _rows(output)
    assert len(rows) > 500
    names = {row["NPU Name"] for row in rows}
    for expected in ("Functional.linear.0.forward.output.0", "Tensor.__matmul__.0.forward.output.0",
                     "Functional.layer_norm.0.forward.output.0", "Module.blocks.0.mlp.0.Linear.forward.0.output.0",
                     "Functional.linear.0.backward.output.0", "Module.head.Linear.parameters_grad.0.weight"):
        assert expected in names
    for row in rows:
        assert row["Bench Name"] == row["NPU Name"], row
        assert row["Result"] == "pass" and row["Err_message"] == "[]", row
        assert [row[c] for c in ("Max diff", "Min diff", "Mean diff", "L2norm diff")] == ["0"] * 4, row
        assert row["NPU Dtype"] == row["Bench Dtype"]
    losses = [json.loads((output / run / "run_info.json").read_text())["losses"] for run in ("npu_dump", "bench_dump")]
    assert losses[0] == losses[1] and len(losses[0]) == 1
    assert (output / "compare_report.html").is_file()


def test_gpt_fp16_autocast_first_operator_and_cause(tmp_path):
    output, log = _compare(tmp_path, "--steps", "1", str(GPT), "--amp", "fp16")
    assert "the first operator is Functional.linear.0.forward" in log
    assert "gpt_transformer.py:26" in log and "self.qkv(x)" in log
    rows = _rows(output)
    first = next(row for row in rows if row["NPU Name"] == "Functional.linear.0.forward.output.0")
    assert (first["NPU Dtype"], first["Bench Dtype"], first["Result"]) == ("torch.float16", "torch.float32", "error")
    assert "error: The dtype of NPU and Bench are inconsistent." in json.loads(first["Err_message"])
    # Nothing before it in the forward pass goes beyond msprobe's thresholds (embedding, layer norm: fp32).
    before = rows[:rows.index(first)]
    assert all(row["Result"] == "pass" for row in before if ".forward." in row["NPU Name"])
    explanations = _explanations(output)
    assert explanations["Functional.linear.0.forward"]["verdict"] == "autocast"
    variants = explanations["Functional.linear.0.forward"]["variants"]
    assert variants["autocast off"]["exact"] and not variants["rules on"]["exact"]
    assert variants["all off"]["exact"]
    # Reshaping an fp16 result adds nothing of its own: inherited.
    assert explanations["Tensor.split.0.forward"]["verdict"] == "inherited"
    page = (output / "compare_report.html").read_text()
    for section in ("First diverging operator", "Loss curves", "Layers ranked by divergence", "Functional.linear.0.forward"):
        assert section in page


def test_each_numerics_rule_is_named(tmp_path):
    output, log = _compare(tmp_path, "--tensors", str(PROGRAMS / "numerics_rules.py"),
                           env=_env(INF_NAN_MODE_FORCE_DISABLE="1"))
    explanations = _explanations(output)
    assert explanations["Tensor.__matmul__.0.forward"]["verdict"] == "hf32"
    assert explanations["Tensor.double.0.forward"]["verdict"] == "float64"
    assert explanations["Tensor.__mul__.0.forward"]["verdict"] == "saturation"
    assert explanations["NPU.npu_fusion_attention.0.forward"]["verdict"] == "fused"
    rows = {row["NPU Name"]: row for row in _rows(output)}
    # float32 on the NPU against float64 on the CPU: msprobe cannot match the pair.
    assert rows["Tensor.double.0.forward.output.0"]["Bench Name"] == "N/A"
    # 60000 * 2 saturates to 65504 on the NPU, overflows to inf on the CPU.
    saturated = rows["Tensor.__mul__.0.forward.output.0"]
    assert (saturated["NPU max"], saturated["Bench max"], saturated["Cosine"]) == ("65504.0", " inf", "N/A")
    # msprobe 26's tensor-mode rules leave Inf against a finite value at "pass"; its accuracy
    # standard (Cosine N/A) does not, and npusim counts the call as diverging.
    assert saturated["Result"] == "pass"
    assert "the first operator is Tensor.double.0.forward" in log

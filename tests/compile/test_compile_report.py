"""Recompilations and graph breaks are reported with the source line and the reason."""

import inspect

import os
from pathlib import Path

import torch

import npusim
from npusim.compile.report import compile_report, format_compile_report, reset_compile_report
from npusim.placement import format_placement_report


def _program(x):
    y = x.sin()
    if y.sum().item() > -1e9:  # a host read: Dynamo breaks the graph here
        y = y * 2
    return y + 1


def test_recompiles_and_graph_breaks_are_reported():
    torch._dynamo.reset()
    reset_compile_report()
    compiled = torch.compile(_program, backend="eager")
    for size in (4, 8, 16):  # new shapes: the first recompiles on a size guard
        torch.testing.assert_close(compiled(torch.ones(size, device="npu")).cpu(), _program(torch.ones(size)))
    report = compile_report()
    filename = inspect.getsourcefile(_program)
    first_line = _program.__code__.co_firstlineno
    frame = next(f for f in report["frames"] if f["function"] == "_program")
    assert frame["source"] == f"{filename}:{first_line}"
    assert frame["compiles"] >= 2
    assert any("size mismatch" in r["reason"] for r in frame["recompiles"])
    breaking = frame["graph_breaks"][0]
    assert breaking["source"] == f"{filename}:{first_line + 2}"
    assert "item()" in breaking["reason"]
    assert report["recompiles"] >= 1 and report["graph_breaks"] >= 1
    text = "\n".join(format_compile_report(report))
    assert f"graph break: _program at {filename}:{first_line + 2}" in text
    assert "guard failed" in text


def test_mark_dynamic_avoids_the_recompile():
    torch._dynamo.reset()
    reset_compile_report()

    def scale(x):
        return x * 3

    compiled = torch.compile(scale, backend="eager")
    first = torch.ones(4, device="npu")
    torch._dynamo.mark_dynamic(first, 0)
    compiled(first)
    compiled(torch.ones(9, device="npu"))
    frame = next(f for f in compile_report()["frames"] if f["function"] == "scale")
    assert frame["compiles"] == 1 and frame["recompiles"] == []


def test_npusim_run_prints_the_compile_report(tmp_path):
    import os
    import subprocess
    import sys


    program = tmp_path / "dynamic.py"
    program.write_text(
        "import torch\n"
        "def f(x):\n"
        "    y = x.sin()\n"
        "    if y.sum().item() > -1e9:\n"
        "        y = y * 2\n"
        "    return y + 1\n"
        "c = torch.compile(f, backend='eager')\n"
        "for n in (4, 8):\n"
        "    c(torch.ones(n, device='npu'))\n"
    )
    env = _child_environment()
    done = subprocess.run([sys.executable, "-m", "npusim", "run", str(program)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    summary = [line for line in done.stderr.splitlines() if line.startswith("[npusim]")]
    assert any("torch.compile: 2 compiled functions" in line for line in summary), summary
    assert any(f"graph break: f at {program}:4: Unsupported Tensor.item()" in line for line in summary)
    assert any(f"recompile: f at {program}:2: guard failed:" in line and "size mismatch" in line for line in summary)


def _child_environment() -> dict[str, str]:
    """This checkout's npusim when its extension is built in python/ (as conftest picks it), else
    the installed one. (conftest is not imported: every test folder has one of that name.)"""
    source = Path(__file__).resolve().parents[2] / "python"
    env = dict(os.environ)
    if any((source / "npusim").glob("_C*.so")):
        env["PYTHONPATH"] = str(source) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_placement_report_has_the_compile_section():
    """npusim.placement_report() carries the compile report (one implementation with the run
    summary): compiled functions, graph breaks with line and reason, recompilations with the
    failed guard, and fused kernels next to the operators that ran one by one."""
    torch._dynamo.reset()
    npusim.reset_placement_report()

    def fused(x, w):
        return ((x @ w).sin() * 2 + 1).relu()

    x, w = torch.randn(8, 16, device="npu"), torch.randn(16, 16, device="npu")
    torch.testing.assert_close(torch.compile(fused)(x, w).cpu(), fused(x, w).cpu(), atol=1e-4, rtol=1e-4)
    compiled = torch.compile(_program, backend="eager")
    for size in (4, 8):
        compiled(torch.ones(size, device="npu"))
    report = npusim.placement_report()
    section = report["compile"]
    assert {f["function"] for f in section["frames"]} >= {"fused", "_program"}
    assert section["graph_breaks"] >= 1 and section["recompiles"] >= 1
    assert section["fused_kernels"] and all(k["launches"] >= 1 for k in section["fused_kernels"].values())
    # The matrix product of the compiled graph stays an operator of its own (an extern kernel).
    assert section["eager_operators"]["calls"] >= 1
    assert report["operators"]["aten::mm"]["ai_core"] >= 1
    text = "\n".join(format_placement_report(report))
    filename = inspect.getsourcefile(_program)
    first_line = _program.__code__.co_firstlineno
    assert f"graph break: _program at {filename}:{first_line + 2}: Unsupported Tensor.item()" in text
    assert "guard failed" in text and "size mismatch" in text
    assert "fused kernels:" in text and "eager operators:" in text
    # Reading with reset starts a new report, compile records included.
    npusim.placement_report(reset=True)
    after = npusim.placement_report()["compile"]
    assert after["frames"] == [] and after["fused_kernels"] == {}


def test_analysis_restarts_are_not_graph_breaks():
    """Dynamo restarts its analysis when it turns a float scalar into a tensor under dynamic
    shapes (TensorifyScalarRestartAnalysis): no graph breaks there, and the report says none."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import corpus_models
    from torch._dynamo.utils import get_compilation_metrics

    torch._dynamo.reset()
    reset_compile_report()
    model = corpus_models.VariableLengthClassifier().to("npu")
    compiled = torch.compile(model, dynamic=True, backend="aot_eager")
    compiled(torch.randint(0, 64, (4, 8)).to("npu")).sum().backward()
    restarts = {reason for metric in get_compilation_metrics() for reason in metric.restart_reasons or ()}
    assert any("TensorifyScalarRestartAnalysis" in reason for reason in restarts)
    report = compile_report()
    assert report["graph_breaks"] == 0 and report["not_compiled"] == 0
    assert all(not frame["graph_breaks"] for frame in report["frames"])

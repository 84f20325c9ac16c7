"""What torch.compile did to a program on npu: compiled frames, recompilations and graph
breaks with their source lines and reasons, and the fused kernels the compiled graphs ran
next to the operators that still ran one by one (eager code, graph breaks, and the matrix
products and other extern kernels of compiled graphs).

Read from Dynamo's own compilation records (``torch._dynamo.utils.get_compilation_metrics``,
one per frame compile), so that nothing is hooked into Dynamo; empty when Dynamo never ran.
This is the compile section of the placement report (``npusim.placement_report()["compile"]``)
and of the run summary; both render it with :func:`format_compile_report`.
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["compile_report", "format_compile_report", "reset_compile_report"]

# Dynamo names the function that resumes after a graph break "torch_dynamo_resume_in_<fn>_at_<line>".
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<function>.+)_at_(?P<line>\d+)$")
# Restarts of the analysis that break no graph (a scalar made a tensor, a value unspecialized):
# Dynamo records them by their exception class, graph breaks by their reason.
_ANALYSIS_RESTART = re.compile(r"^<class '[\w.]+RestartAnalysis'>$")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text and text.strip() else ""


def _eager_operators(operators: dict[str, Any] | None) -> dict[str, int]:
    """Calls and modelled device time of the operators the executor ran one by one, from the
    placement report's ``operators`` table."""
    if operators is None:
        try:
            from npusim import _C

            operators = dict(_C._placement_report()["operators"])
        except Exception:
            operators = {}
    calls = device_ns = 0
    for counts in operators.values():
        calls += sum(int(counts.get(placement, 0)) for placement in ("ai_core", "ai_cpu", "cpu_fallback"))
        device_ns += int(counts.get("device_ns", 0))
    return {"calls": calls, "device_ns": device_ns}


def _npu_graph_runs() -> dict[str, int]:
    if "npusim.compile.npu_graph_trees" not in sys.modules:
        return {"captured": 0, "replayed": 0, "warmups": 0, "eager": 0}
    from npusim.compile import npu_graph_trees

    return dict(npu_graph_trees.stats)


def compile_report(operators: dict[str, Any] | None = None) -> dict[str, Any]:
    """Keys: ``frames`` (one per compiled function: ``function``, ``source`` "file:line",
    ``compiles``, ``recompiles`` — list of ``reason``, the guard that failed —,
    ``graph_breaks`` — list of ``reason``, ``source`` of the breaking line —, and
    ``failures``, why Dynamo gave a frame up and let it run eagerly); ``graph_breaks`` and
    ``recompiles`` (totals); ``not_compiled`` (frames Dynamo gave up entirely); ``fused_kernels`` (name -> launches, device_ns);
    ``eager_operators`` (``calls``, ``device_ns`` of the operators run one by one, counted from
    ``operators``, the placement report's table, read now when not given); ``npu_graphs``
    (reduce-overhead's NPUGraphs: ``captured``, ``replayed``, ``warmups`` and ``eager``, the
    runs without the graph because its last outputs were still in use)."""
    from npusim.compile import _native

    report: dict[str, Any] = {"frames": [], "graph_breaks": 0, "recompiles": 0, "not_compiled": 0, "fused_kernels": {}}
    report["fused_kernels"] = {
        name: {"launches": launches, "device_ns": device_ns}
        for name, (launches, device_ns) in sorted(_native.kernel_totals.items())
    }
    report["eager_operators"] = _eager_operators(operators)
    report["npu_graphs"] = _npu_graph_runs()
    if "torch._dynamo.utils" not in sys.modules:
        return report
    from torch._dynamo.utils import get_compilation_metrics

    frames: dict[tuple[str, str, int], dict[str, Any]] = {}
    breaks: set[tuple[str, str, int]] = set()
    for metric in get_compilation_metrics():
        if not metric.co_name:
            continue
        name, filename, first_line = metric.co_name, metric.co_filename or "?", metric.co_firstlineno or 0
        resumed = _RESUME.match(name)
        if resumed:
            # A resume function starts at the line that broke the graph of its parent.
            breaks.add((resumed.group("function"), filename, int(resumed.group("line"))))
        key = (name, filename, first_line)
        frame = frames.setdefault(
            key,
            {
                "function": name,
                "source": f"{filename}:{first_line}",
                "compiles": 0,
                "recompiles": [],
                "graph_breaks": [],
            },
        )
        frame["compiles"] += 1
        if metric.recompile_reason:
            frame["recompiles"].append({"reason": str(metric.recompile_reason)})
        for reason in sorted(metric.restart_reasons or ()):
            short = _first_line(str(reason))
            if _ANALYSIS_RESTART.match(short):
                continue
            if short and all(b["reason"] != short for b in frame["graph_breaks"]):
                frame["graph_breaks"].append({"reason": short, "source": ""})
        if metric.fail_reason:
            frame.setdefault("failures", []).append(_first_line(str(metric.fail_reason)))
    # Attach each breaking line (known from its resume function) to the frame it broke.
    for function, filename, line in sorted(breaks):
        candidates = [
            f
            for (n, fn, first), f in frames.items()
            if fn == filename and first <= line and f["graph_breaks"]
            and (n == function or _RESUME.match(n) and _RESUME.match(n).group("function") == function)
        ]
        if candidates:
            frame = max(candidates, key=lambda f: int(f["source"].rsplit(":", 1)[1]))
            for entry in frame["graph_breaks"]:
                if not entry["source"]:
                    entry["source"] = f"{filename}:{line}"
                    break
    report["frames"] = list(frames.values())
    report["not_compiled"] = sum(1 for f in report["frames"] if f.get("failures") and f["compiles"] == len(f["failures"]))
    report["graph_breaks"] = sum(len(f["graph_breaks"]) for f in report["frames"])
    report["recompiles"] = sum(len(f["recompiles"]) for f in report["frames"])
    return report


def reset_compile_report() -> None:
    """Forget Dynamo's compilation records and the fused-kernel totals."""
    from npusim.compile import _native

    _native.reset_kernel_totals()
    if "npusim.compile.npu_graph_trees" in sys.modules:
        from npusim.compile import npu_graph_trees

        npu_graph_trees.reset_stats()
    if "torch._dynamo.utils" in sys.modules:
        from torch._dynamo.utils import clear_compilation_metrics

        clear_compilation_metrics()


def format_compile_report(report: dict[str, Any], top: int = 5) -> list[str]:
    """A few lines for the run summary; nothing when nothing was compiled."""
    if not report["frames"] and not report["fused_kernels"]:
        return []
    not_compiled = report.get("not_compiled", 0)
    lines = [
        f"torch.compile: {len(report['frames']) - not_compiled} compiled functions, "
        f"{report['recompiles']} recompilations, {report['graph_breaks']} graph breaks"
        + (f", {not_compiled} functions left to run eagerly" if not_compiled else "")
    ]
    for frame in report["frames"]:
        for failure in frame.get("failures", [])[:top]:
            lines.append(f"  not compiled: {frame['function']} at {frame['source']}: {failure}")
        for recompile in frame["recompiles"][:top]:
            lines.append(f"  recompile: {frame['function']} at {frame['source']}: guard failed: {recompile['reason']}")
        for graph_break in frame["graph_breaks"][:top]:
            where = graph_break["source"] or frame["source"]
            lines.append(f"  graph break: {frame['function']} at {where}: {graph_break['reason']}")
    kernels = report["fused_kernels"]
    if kernels:
        launches = sum(k["launches"] for k in kernels.values())
        device_ns = sum(k["device_ns"] for k in kernels.values())
        lines.append(
            f"  fused kernels: {len(kernels)} generated, {launches} launches, "
            f"{device_ns / 1e6:.3f} ms simulated device time"
        )
    graphs = report.get("npu_graphs")
    if graphs and (graphs["captured"] or graphs["eager"]):
        lines.append(
            f"  NPUGraphs (reduce-overhead): {graphs['captured']} captured, {graphs['replayed']} replays, "
            f"{graphs['warmups']} warm-up runs, {graphs['eager']} runs without the graph (its last outputs "
            "were still in use)"
        )
    eager = report.get("eager_operators")
    if eager and eager["calls"]:
        lines.append(
            f"  eager operators: {eager['calls']} calls (outside fused kernels: eager code, graph "
            f"breaks, extern kernels), {eager['device_ns'] / 1e6:.3f} ms simulated device time"
        )
    return lines

"""Where the real Ascend stack would run what the program did, and where it waited.

:func:`placement_report` returns, for the calls made on ``npu`` since the start (or the last
reset): the calls of each operator by placement (``ai_core``, ``ai_cpu``, ``cpu_fallback``), the
operators that fell back to the CPU with the first source line that hit each, and the
synchronization points (the host waited for the device) with their source lines and counts, and
what torch.compile did (``compile``: npusim.compile.report). The
placement comes from the data of the selected torch_npu release line
(``npusim/data/placement``; ``NPUSIM_TORCH_NPU_VERSION``, ``NPUSIM_PLACEMENT_OVERRIDES``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["placement_report", "reset_placement_report", "format_placement_report"]

PLACEMENTS = ("ai_core", "ai_cpu", "cpu_fallback")


def placement_report(reset: bool = False) -> dict[str, Any]:
    """The placement report as a dict; ``reset=True`` starts a new one after reading it.

    Keys: ``release_line``; ``by_placement`` (calls per placement); ``operators`` (name ->
    calls per placement); ``fallbacks`` (list of ``operator``, ``calls``, ``first_source``,
    most calls first); ``sync_points`` (list of ``what``, ``source``, ``count``, most first);
    ``compile`` (compiled functions, graph breaks, recompilations, fused kernels vs eager
    operators: :func:`npusim.compile.report.compile_report`).
    """
    from npusim import _C
    from npusim._sync_labels import NPUSIM_OWN
    from npusim.compile.report import compile_report, reset_compile_report

    report = dict(_C._placement_report())
    report["compile"] = compile_report(report["operators"])
    if reset:
        _C._reset_placement_report()
        reset_compile_report()
    report["by_placement"] = {
        placement: sum(counts[placement] for counts in report["operators"].values()) for placement in PLACEMENTS
    }
    report["fallbacks"] = sorted(report["fallbacks"], key=lambda f: (-f["calls"], f["operator"]))
    # npusim's own synchronizations (its launcher, the profiler's exit under `npusim run --report`)
    # are not the program's.
    own = [s for s in report["sync_points"] if s["what"].startswith(NPUSIM_OWN)]
    report["sync_points"] = sorted((s for s in report["sync_points"] if s not in own),
                                   key=lambda s: (-s["count"], s["what"], s["source"]))
    return report


def reset_placement_report() -> None:
    """Forget the calls, synchronization points and compile records counted so far."""
    from npusim import _C
    from npusim.compile.report import reset_compile_report

    _C._reset_placement_report()
    reset_compile_report()


def format_placement_report(report: dict[str, Any], top: int = 5) -> list[str]:
    """The short table ``npusim run`` prints: operators by placement, top fallbacks, top syncs,
    then the compile section."""
    from npusim.compile.report import format_compile_report

    compiled = format_compile_report(report["compile"], top) if report.get("compile") else []
    counts = report["by_placement"]
    total = sum(counts.values())
    if total == 0:
        return compiled
    lines = [
        f"placement (torch_npu {report['release_line']}): {total} operator calls: "
        + ", ".join(f"{placement} {counts[placement]}" for placement in PLACEMENTS)
    ]
    for fallback in report["fallbacks"][:top]:
        where = fallback["first_source"] or "unknown source"
        lines.append(f"  CPU fallback: {fallback['operator']} x{fallback['calls']} (first at {where})")
    for sync in report["sync_points"][:top]:
        where = sync["source"] or "unknown source"
        lines.append(f"  sync point: {sync['what']} x{sync['count']} at {where}")
    return lines + compiled

"""What the program would cost on the real chip: npusim's performance report.

Every operator on ``npu`` is priced by the performance model of the chosen chip (910B2 by
default; ``NPUSIM_SOC``) and placed on the simulated timeline (host dispatch, streams, syncs).
:func:`performance_report` sums it up since the start or the last reset: the estimated elapsed
time on the chip (per step when you say how many steps ran), where it went (Cube, Vector, AI CPU,
CPU fallback, transfers, and the time the device sat idle waiting for the host), the model FLOPs
utilisation of the Cube, and the peak device memory.
"""

from __future__ import annotations

from typing import Any

__all__ = ["performance_report", "reset_performance_report", "format_performance_report", "step"]

_UNITS = ("cube", "vector", "ai_cpu", "cpu_fallback", "transfer")

# Simulated times (ns) at which the program called npusim.step(), since the last reset.
_step_marks: list[int] = []


def _now_ns() -> int:
    """The simulated time now: the host clock or the end of the queued device work, whichever is later."""
    from npusim import _C

    now = int(dict(_C._timing_totals())["host_now_ns"])
    for index in range(_C._device_count()):
        if _C._is_device_initialized(index):
            now = max(now, int(_C._timeline_info(index)["device_ns"]))
    return now


def step() -> None:
    """Marks the end of one training step (call it once per iteration, like a profiler's ``step()``).

    With two or more marks the report's ``step_s`` is the mean time between consecutive marks:
    what comes before the first mark (setup, the first step's one-time costs) and after the last
    (evaluation, saving) stays out of it.
    """
    _step_marks.append(_now_ns())


def performance_report(steps: int | None = None, reset: bool = False) -> dict[str, Any]:
    """The report as a dict (times in seconds of simulated chip time).

    Keys: ``chip``; ``elapsed_s`` (host and device timelines together); ``step_s``, ``steps`` and
    ``steps_source``: with steps marked by :func:`step`, the mean time between marks
    (``"marked"``); otherwise, when ``steps`` is given, the whole elapsed time divided by it
    (``"divided"``: setup and evaluation included); ``busy_s`` by unit; ``host_bound_idle_s`` (device idle while
    the host dispatched or waited); ``launches``; ``mfu`` (useful Cube FLOPs / (elapsed x peak
    fp16/bf16 FLOP/s)); ``peak_memory_bytes`` (largest allocated peak over the devices);
    ``top_operators`` (the ten operators with the most device time, as (name, seconds)).
    """
    from npusim import _C

    totals = dict(_C._timing_totals())
    device_clock = 0
    peak_memory = 0
    for index in range(_C._device_count()):
        if not _C._is_device_initialized(index):
            continue
        device_clock = max(device_clock, int(_C._timeline_info(index)["device_ns"]))
        peak_memory = max(peak_memory, int(_C._memory_stats(index)["allocated_bytes"][0]["peak"]))
    start = int(totals["host_start_ns"])
    end = max(int(totals["host_now_ns"]), device_clock)
    elapsed_ns = max(0, end - start)
    busy = {unit: int(totals["device_ns_by_unit"][unit]) / 1e9 for unit in _UNITS}
    busy_total = sum(busy.values())
    report = {
        "chip": str(_C._chip_info()["soc_name"]),
        "elapsed_s": elapsed_ns / 1e9,
        "busy_s": busy,
        "host_bound_idle_s": max(0.0, elapsed_ns / 1e9 - busy_total),
        "launches": int(totals["launches"]),
        "mfu": (totals["cube_flops"] / (elapsed_ns / 1e9 * totals["peak_fp16_flops"])) if elapsed_ns else 0.0,
        "peak_memory_bytes": peak_memory,
    }
    operators = _C._placement_report()["operators"]
    report["top_operators"] = sorted(
        ((name, int(counts["device_ns"]) / 1e9) for name, counts in operators.items() if counts["device_ns"]),
        key=lambda item: -item[1],
    )[:10]
    from npusim.distributed._report import communication_section

    communication = communication_section(report["elapsed_s"], busy_total)
    if communication is not None:
        report["communication"] = communication
        # Waiting for communication that compute did not hide is not host-bound idling.
        exposed = communication["communication_s"] - communication["overlap_s"]
        report["host_bound_idle_s"] = max(0.0, report["host_bound_idle_s"] - exposed)
    marks = list(_step_marks)
    if len(marks) >= 2:
        report["steps"] = len(marks) - 1
        report["step_s"] = (marks[-1] - marks[0]) / 1e9 / (len(marks) - 1)
        report["steps_source"] = "marked"
    elif len(marks) == 1:
        report["steps"] = 1
        report["step_s"] = max(0, marks[0] - start) / 1e9
        report["steps_source"] = "marked"
    elif steps:
        report["steps"] = steps
        report["step_s"] = report["elapsed_s"] / steps
        report["steps_source"] = "divided"
    if reset:
        reset_performance_report()
    return report


def reset_performance_report() -> None:
    """Start a new report: totals to zero, elapsed time from now (peak memory is torch.npu's)."""
    from npusim import _C

    _C._reset_timing_totals()
    from npusim.distributed._report import reset

    reset()
    _step_marks.clear()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def format_performance_report(report: dict[str, Any], failed: bool = False) -> list[str]:
    """The lines ``npusim run`` prints; ``failed``: the program did not finish (no per-step
    figure is printed unless steps were marked)."""
    if not report["launches"]:
        return []
    elapsed = report["elapsed_s"]
    head = f"estimated on {report['chip']}: {_ms(elapsed)} elapsed"
    source = report.get("steps_source")
    if source == "marked":
        head += f", {_ms(report['step_s'])} per step (mean of {report['steps']} steps marked by npusim.step())"
    elif source == "divided" and not failed:
        head += (f", {_ms(report['step_s'])} per step (the whole run, setup and evaluation included, "
                 f"divided by --steps {report['steps']}; mark steps with npusim.step() for an exact figure)")
    lines = [head + f", {report['launches']} launches, MFU {report['mfu'] * 100:.1f}%"]
    if source == "divided" and failed:
        lines.append("  no per-step figure: the program failed before finishing its steps")
    parts = [f"{unit} {_ms(seconds)}" for unit, seconds in report["busy_s"].items() if seconds > 0]
    parts.append(f"host-bound idle {_ms(report['host_bound_idle_s'])}")
    lines.append("  breakdown: " + ", ".join(parts))
    top = ", ".join(f"{name} {_ms(seconds)}" for name, seconds in report.get("top_operators", [])[:5])
    if top:
        lines.append(f"  top operators by device time: {top}")
    if "communication" in report:
        from npusim.distributed._report import format_lines

        lines.extend(format_lines(report["communication"]))
    lines.append(f"  peak device memory: {report['peak_memory_bytes'] / 2**20:.2f} MiB")
    return lines

"""What ``npusim run`` prints after a program: devices used, operators, memory peaks, time.

:func:`collect` reads the state of the simulated devices into a :class:`RunSummary` (without
starting the runtime if the program never did); :func:`format_summary` renders it as a few
lines for stderr.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["DeviceUse", "RunSummary", "collect", "format_summary", "format_bytes"]


@dataclasses.dataclass
class DeviceUse:
    index: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    device_time_ns: int
    busy_ns: int


@dataclasses.dataclass
class RunSummary:
    chip: str = ""
    device_count: int = 0
    runtime_initialized: bool = False
    devices: list[DeviceUse] = dataclasses.field(default_factory=list)
    operator_calls: int = 0
    operator_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    host_time_ns: int = 0
    placement: dict[str, Any] = dataclasses.field(default_factory=dict)
    performance: dict[str, Any] = dataclasses.field(default_factory=dict)
    compile: dict[str, Any] = dataclasses.field(default_factory=dict)  # npusim.compile.report
    # Operator calls that computed in HF32 (matmul_calls, convolution_calls): results then differ
    # from an fp32 CPU run, and the summary says so.
    hf32: dict[str, int] = dataclasses.field(default_factory=dict)

    def top_operators(self, count: int = 5) -> list[tuple[str, int]]:
        ranked = sorted(self.operator_counts.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:count]


def format_bytes(size: int) -> str:
    """A byte count with a binary unit and two decimals, as in the OOM message."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{size} bytes"


def _first_stat(stats: dict[str, Any], name: str, metric: str) -> int:
    value = stats.get(name)
    if isinstance(value, (list, tuple)) and value:
        return int(value[0].get(metric, 0))
    return 0


def collect(steps: int | None = None) -> RunSummary:
    """Read the simulated devices' state now."""
    from npusim import _C

    summary = RunSummary(device_count=int(_C._device_count()))
    try:
        summary.chip = str(_C._chip_info().get("soc_name", ""))
    except Exception:
        summary.chip = ""
    try:
        counts = {str(name): int(calls) for name, calls in dict(_C._operator_counts()).items() if int(calls) > 0}
    except Exception:
        counts = {}
    summary.operator_counts = counts
    summary.operator_calls = sum(counts.values())
    from npusim.npu._lazy import _runtime_initialized

    summary.runtime_initialized = _runtime_initialized()
    try:
        from npusim.compile.report import compile_report

        summary.compile = compile_report()
    except Exception:
        summary.compile = {}
    if not summary.runtime_initialized:
        return summary
    try:
        summary.hf32 = {str(k): int(v) for k, v in dict(_C._hf32_usage()).items()}
    except Exception:
        summary.hf32 = {}
    try:
        from npusim.placement import placement_report

        summary.placement = placement_report()
        summary.compile = summary.placement.get("compile", summary.compile)
    except Exception:
        summary.placement = {}
    try:
        from npusim.performance import performance_report

        summary.performance = performance_report(steps=steps)
    except Exception:
        summary.performance = {}
    for index in range(summary.device_count):
        if not _C._is_device_initialized(index):
            continue  # never used: reading it must not initialize it
        try:
            stats = _C._memory_stats(index)
            timeline = _C._timeline_info(index)
        except Exception:
            continue
        peak_allocated = _first_stat(stats, "allocated_bytes", "peak")
        peak_reserved = _first_stat(stats, "reserved_bytes", "peak")
        allocations = _first_stat(stats, "allocation", "allocated")
        device_ns = int(timeline.get("device_ns", 0))
        busy_ns = int(timeline.get("busy_ns", 0))
        summary.host_time_ns = max(summary.host_time_ns, int(timeline.get("host_ns", 0)))
        if allocations or peak_reserved or busy_ns:
            summary.devices.append(DeviceUse(index, peak_allocated, peak_reserved, device_ns, busy_ns))
    return summary


def _milliseconds(ns: int) -> str:
    return f"{ns / 1e6:.3f} ms"


def _numerics_lines(hf32: dict[str, int]) -> list[str]:
    """One line for each HF32 switch that changed results in this run, with the switch to turn it off."""
    lines = []
    convolutions = hf32.get("convolution_calls", 0)
    if convolutions:
        lines.append(f"numerics: {convolutions} fp32 convolution calls ran in HF32 (torch_npu's default "
                     "torch.npu.conv.allow_hf32 = True), so results differ from an fp32 CPU run; "
                     "torch.npu.conv.allow_hf32 = False computes them in fp32")
    matmuls = hf32.get("matmul_calls", 0)
    if matmuls:
        lines.append(f"numerics: {matmuls} fp32 matmul calls ran in HF32 (torch.npu.matmul.allow_hf32 = True), "
                     "so results differ from an fp32 CPU run; torch.npu.matmul.allow_hf32 = False computes them "
                     "in fp32")
    return lines


def format_summary(summary: RunSummary, program: str, exit_code: int) -> str:
    """The summary as lines prefixed with ``[npusim]``, ending with a newline."""
    lines = [f"run summary: {program} (exit code {exit_code})"]
    chip = summary.chip or "unknown chip"
    used = ", ".join(f"npu:{d.index}" for d in summary.devices) or "none"
    lines.append(f"  devices: {summary.device_count} x {chip} simulated; used: {used}")
    if summary.operator_calls:
        top = ", ".join(f"{name} {calls}" for name, calls in summary.top_operators())
        lines.append(
            f"  operators: {summary.operator_calls} calls of {len(summary.operator_counts)} operators; top: {top}"
        )
    else:
        lines.append("  operators: none ran on npu")
    for device in summary.devices:
        lines.append(
            f"  npu:{device.index}: memory peak {format_bytes(device.peak_allocated_bytes)} allocated, "
            f"{format_bytes(device.peak_reserved_bytes)} reserved; simulated device time "
            f"{_milliseconds(device.device_time_ns)} (busy {_milliseconds(device.busy_ns)})"
        )
    lines.extend(f"  {line}" for line in _numerics_lines(summary.hf32))
    if summary.performance:
        from npusim.performance import format_performance_report

        lines.extend(f"  {line}" for line in format_performance_report(summary.performance, failed=exit_code != 0))
    if summary.placement:
        # The placement report ends with its compile section.
        from npusim.placement import format_placement_report

        lines.extend(f"  {line}" for line in format_placement_report(summary.placement))
    elif summary.compile:
        from npusim.compile.report import format_compile_report

        lines.extend(f"  {line}" for line in format_compile_report(summary.compile))
    return "".join(f"[npusim] {line}\n" for line in lines)

"""The communication part of npusim's performance report."""

from __future__ import annotations

import sys
from typing import Any


def communication_section(elapsed_s: float, compute_busy_s: float) -> dict[str, Any] | None:
    """Modelled HCCL time, its overlap with compute and per-operation bus bandwidth; None when
    the program ran no collective (the extension is not even loaded then)."""
    extension = sys.modules.get("npusim._distributed_C")
    if extension is None:
        return None
    totals = dict(extension._communication_totals())
    if not totals["calls"]:
        return None
    communication_s = totals["ns"] / 1e9
    # Communication while a compute stream of the same device was busy, from the timeline's
    # busy intervals of every stream.
    overlap_s = min(communication_s, totals["overlap_ns"] / 1e9)
    return {
        "communication_s": communication_s,
        "overlap_s": overlap_s,
        "overlap_fraction": overlap_s / communication_s if communication_s else 0.0,
        "stall_in_wait_s": totals["exposed_ns"] / 1e9,
        "overlap_truncated": bool(totals["overlap_truncated"]),
        "calls": int(totals["calls"]),
        "operations": [
            {
                "name": op["name"],
                "algorithm": op["algorithm"],
                "calls": int(op["calls"]),
                "bytes": int(op["bytes"]),
                "time_s": op["ns"] / 1e9,
                "bus_bandwidth_gbps": op["bus_bandwidth_bytes_per_s"] / 1e9,
                "largest_bytes": int(op["largest_bytes"]),
            }
            for op in sorted(totals["operations"], key=lambda op: -op["ns"])
        ],
    }


def reset() -> None:
    extension = sys.modules.get("npusim._distributed_C")
    if extension is not None:
        extension._reset_communication_totals()


def format_lines(section: dict[str, Any]) -> list[str]:
    lines = [
        f"  communication (HCCL, modelled): {section['communication_s'] * 1e3:.3f} ms in {section['calls']} calls, "
        f"{section['overlap_s'] * 1e3:.3f} ms overlapped with compute ({section['overlap_fraction'] * 100:.0f}%)"
    ]
    for op in section["operations"][:6]:
        lines.append(
            f"    {op['name']}: {op['calls']} calls, {op['time_s'] * 1e3:.3f} ms, {op['algorithm']}, "
            f"bus bandwidth {op['bus_bandwidth_gbps']:.1f} GB/s at {op['largest_bytes'] / 2**20:.2f} MiB"
        )
    return lines

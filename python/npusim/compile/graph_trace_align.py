"""Aligned traces of NPUGraph debug dumps (torch_npu's ``torch_npu.npu._npugraph_utils``).

``NPUGraph.debug_dump(path)`` writes the captured graph as Chrome trace events (one per task,
on the thread of its stream); :func:`align_trace_json` derives ``<path>.aligned.json`` from it
for viewing: the events of each stream sorted and laid end to end from the stream's first
timestamp, so that gaps of the capture (host time between launches) do not show as idle
device time. The raw dump is left unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["align_trace_json"]


def _aligned_path(path: Path) -> Path:
    return path.with_suffix(path.suffix.replace(".json", "") + ".aligned.json")


def align_trace_json(input, output=None, merge_gap: float = 0.0):  # noqa: A002 - torch_npu's parameter name
    """Writes the aligned trace of dump ``input`` to ``output`` (default ``<input>.aligned.json``)
    and returns its path."""
    source = Path(input)
    target = Path(output) if output else _aligned_path(source)
    with open(source, encoding="utf-8") as handle:
        loaded = json.load(handle)
    events = loaded.get("traceEvents", []) if isinstance(loaded, dict) else list(loaded)
    by_thread: dict = {}
    for event in events:
        by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(dict(event))
    aligned = []
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: e.get("ts", 0))
        clock = thread_events[0].get("ts", 0)
        for event in thread_events:
            event["ts"] = clock
            clock += event.get("dur", 0) + merge_gap
            aligned.append(event)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(aligned, handle, ensure_ascii=False, indent=2)
    return str(target)

"""A checker of the Chrome Trace Event Format (the JSON object form that Perfetto and
chrome://tracing read): returns the list of problems, empty when the trace is valid."""

from __future__ import annotations

import json
import math

_PHASES = set("XBEiIbneSTpFsftPCMNODRc(),") | {"I"}


def problems(path_or_data) -> list[str]:
    if isinstance(path_or_data, (str, bytes)) or hasattr(path_or_data, "__fspath__"):
        with open(path_or_data) as f:
            data = json.load(f)  # a syntax error raises: the file is not JSON
    else:
        data = path_or_data
    out = []
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        return ["the top level must be an object with a traceEvents list"]
    if data.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        out.append("displayTimeUnit must be ms or ns")
    flows: dict = {}
    stacks: dict = {}
    for i, e in enumerate(data["traceEvents"]):
        where = f"event {i} ({e.get('name')!r})"
        if not isinstance(e, dict):
            out.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if ph not in _PHASES:
            out.append(f"{where}: unknown phase {ph!r}")
            continue
        if ph != "M":
            ts = e.get("ts")
            if not isinstance(ts, (int, float)) or not math.isfinite(ts):
                out.append(f"{where}: ts must be a finite number")
        for key in ("pid", "tid"):
            if key in e and not isinstance(e[key], (int, str)):
                out.append(f"{where}: {key} must be an integer or a string")
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                out.append(f"{where}: complete event needs a non-negative dur")
        if ph in ("B", "E"):
            key = (e.get("pid"), e.get("tid"))
            if ph == "B":
                stacks.setdefault(key, []).append(e)
            elif not stacks.get(key):
                out.append(f"{where}: E without a matching B")
            else:
                stacks[key].pop()
        if ph in ("s", "t", "f"):
            if "id" not in e:
                out.append(f"{where}: flow event without id")
            flows.setdefault((e.get("cat"), e.get("id")), []).append(ph)
        if "args" in e and not isinstance(e["args"], dict):
            out.append(f"{where}: args must be an object")
    for key, stack in stacks.items():
        if stack:
            out.append(f"{len(stack)} B events without E on {key}")
    for key, phases in flows.items():
        if phases.count("s") != 1 or phases.count("f") != 1:
            out.append(f"flow {key}: needs exactly one start and one finish, has {phases}")
    return out

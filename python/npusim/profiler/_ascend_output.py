"""Writes torch_npu's profiler output tree from a torch.profiler chrome trace of an npusim run:
``{worker}_{timestamp}_ascend_pt/ASCEND_PROFILER_OUTPUT/`` with the column names of the real files
(contract §19). What the simulator cannot know is written as ``N/A`` (block dims, formats of
outputs); communication is empty until collectives report device activity."""

from __future__ import annotations

import csv
import json
import os
import shutil

from ._trace import Trace

KERNEL_DETAILS = ["Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State",
                  "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Num",
                  "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
                  "Output Shapes", "Output Data Types", "Output Formats"]
OPERATOR_DETAILS = ["Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
                    "Device Self Duration(us)", "Device Total Duration(us)",
                    "Device Self Duration With AICore(us)", "Device Total Duration With AICore(us)"]
STEP_TRACE_TIME = ["Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped",
                   "Communication", "Free", "Stage", "Bubble",
                   "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
OP_STATISTIC = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                "Max Time(us)", "Ratio(%)"]
MEMORY_RECORD = ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
                 "Stream Ptr", "Device Type"]
OPERATOR_MEMORY = ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)",
                   "Duration(us)", "Active Duration(us)", "Allocation Total Allocated(MB)",
                   "Allocation Total Reserved(MB)", "Allocation Total Active(MB)", "Release Total Allocated(MB)",
                   "Release Total Reserved(MB)", "Release Total Active(MB)", "Stream Ptr", "Device Type"]

_ASCEND_DTYPE = {"float": "DT_FLOAT", "c10::Half": "DT_FLOAT16", "c10::BFloat16": "DT_BF16", "double": "DT_DOUBLE",
                 "long int": "INT64", "int": "INT32", "short int": "INT16", "signed char": "INT8",
                 "unsigned char": "UINT8", "bool": "BOOL", "c10::complex<float>": "COMPLEX64"}
_DEVICE_CORES = ("AI_CORE", "AI_VECTOR_CORE", "AI_CPU")


def _shapes(op) -> str:
    dims = (op.args.get("Input Dims") if op else None) or []
    return ";".join(",".join(str(d) for d in shape) if isinstance(shape, list) else "" for shape in dims) or "N/A"


def _dtypes(op) -> str:
    types = (op.args.get("Input type") if op else None) or []
    return ";".join(_ASCEND_DTYPE.get(t, t.upper() if t else "") for t in types) or "N/A"


def _formats(op) -> str:
    dims = (op.args.get("Input Dims") if op else None) or []
    return ";".join("ND" if d else "" for d in dims) or "N/A"


def op_states(trace: Trace) -> dict:
    """dynamic when an operator's input shapes change from step to step (the real stack compiles a
    kernel per new shape, or runs the dynamic-shape binary), else static. Different shapes within
    one step are different call sites, not dynamism; a profile of one step says static."""
    per_step: dict = {}
    kernel_ops = [op for op in trace.ops if op.cat == "cpu_op" and any(t.kind == "kernel" for t in op.tasks)]
    for op in kernel_ops:
        step = trace.step_of(op.ts)
        if step is not None:
            per_step.setdefault(op.name, {}).setdefault(step, set()).add(_shapes(op))
    states = {op.name: "static" for op in kernel_ops}
    for name, steps in per_step.items():
        shape_sets = list(steps.values())
        if len(shape_sets) > 1 and any(shapes != shape_sets[0] for shapes in shape_sets[1:]):
            states[name] = "dynamic"
    return states


def _union(intervals: list) -> list:
    merged: list = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _length(intervals: list) -> float:
    return sum(end - start for start, end in intervals)


def _overlap(a: list, b: list) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _mb(value: int) -> str:
    return f"{value / 2**20:.6f}"


def _write(path: str, header: list, rows: list) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def write_ascend_output(trace_path: str, root: str, rank: int = 0) -> str:
    """Fills ``root/ASCEND_PROFILER_OUTPUT`` from the chrome trace at ``trace_path``; returns that folder."""
    out = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out, exist_ok=True)
    target = os.path.join(out, "trace_view.json")
    if os.path.abspath(trace_path) != os.path.abspath(target):
        shutil.copyfile(trace_path, target)
    trace = Trace.load(target)
    states = op_states(trace)

    # kernel_details.csv: the device kernels (copies and host fallbacks are not kernels); Type is the
    # kernel's name, as in op_statistic.csv below.
    rows, last_end, task_id = [], {}, 0
    for task in trace.tasks:
        if task.kind != "kernel" or task.core not in _DEVICE_CORES:
            continue
        op = task.op
        wait = max(0.0, task.ts - last_end[task.stream]) if task.stream in last_end else 0.0
        last_end[task.stream] = task.ts + task.dur
        step = trace.step_of(op.ts) if op else None
        rows.append([step if step is not None else "", task.device, "N/A", task_id, task.stream, task.name,
                     task.name, states.get(op.name, "static") if op else "static",
                     task.core, f"{task.ts:.3f}", f"{task.dur:.3f}", f"{wait:.3f}", "N/A", "N/A",
                     "YES" if task.unit == "Cube" and "DT_FLOAT" in _dtypes(op).split(";") else "NO",
                     _shapes(op), _dtypes(op), _formats(op), "N/A", "N/A", "N/A"])
        task_id += 1
    _write(os.path.join(out, "kernel_details.csv"), KERNEL_DETAILS, rows)

    # operator_details.csv: every aten operator, host and device times (self: its own launches).
    def device_total(op, aicore_only: bool) -> float:
        own = sum(t.dur for t in op.tasks if not aicore_only or t.core in ("AI_CORE", "AI_VECTOR_CORE"))
        return own + sum(device_total(c, aicore_only) for c in op.children if c.cat == "cpu_op")

    rows = []
    for op in trace.ops:
        if op.cat != "cpu_op":
            continue
        host_self = op.dur - sum(c.dur for c in op.children if c.cat == "cpu_op")
        rows.append([op.name, _shapes(op), trace.call_stack(op), f"{host_self:.3f}", f"{op.dur:.3f}",
                     f"{sum(t.dur for t in op.tasks):.3f}", f"{device_total(op, False):.3f}",
                     f"{sum(t.dur for t in op.tasks if t.core in ('AI_CORE', 'AI_VECTOR_CORE')):.3f}",
                     f"{device_total(op, True):.3f}"])
    _write(os.path.join(out, "operator_details.csv"), OPERATOR_DETAILS, rows)

    # op_statistic.csv: per operator type and core. The type is the kernel's name: the aten operator's,
    # or the CANN op type where the real stack launches kernels named otherwise (DSAGenBitMask,
    # DropOutDoMask inside aten::native_dropout).
    groups: dict = {}
    for task in trace.tasks:
        if task.kind == "kernel":
            key = (task.device, task.name, task.core)
            groups.setdefault(key, []).append(task.dur)
    total = sum(sum(v) for v in groups.values()) or 1.0
    rows = [[d, t, c, len(v), f"{sum(v):.3f}", f"{min(v):.3f}", f"{sum(v) / len(v):.3f}", f"{max(v):.3f}",
             f"{100.0 * sum(v) / total:.2f}"] for (d, t, c), v in sorted(groups.items(), key=lambda kv: -sum(kv[1]))]
    _write(os.path.join(out, "op_statistic.csv"), OP_STATISTIC, rows)

    # step_trace_time.csv: in simulated device time, per step (the whole window when no schedule).
    windows = [(s.name.split("#")[-1], s.ts, s.ts + s.dur) for s in trace.steps] or [("", float("-inf"), float("inf"))]
    rows, communication = [], {}
    for name, begin, end in windows:
        tasks = [t for t in trace.tasks if t.op is None or begin <= t.op.ts <= end]
        comm_tasks = [t for t in tasks if t.core == "COMMUNICATION"]
        compute = _union([(t.sim_start, t.sim_start + t.dur) for t in tasks if t.core != "COMMUNICATION"])
        comm = _union([(t.sim_start, t.sim_start + t.dur) for t in comm_tasks])
        overlapped = _overlap(compute, comm)
        ends = [t.sim_start + t.dur for t in tasks]
        span = max(ends) - min(t.sim_start for t in tasks) if tasks else 0.0
        busy, comm_total = _length(compute), _length(comm)
        rows.append([tasks[0].device if tasks else 0, name, f"{busy:.3f}", f"{comm_total - overlapped:.3f}",
                     f"{overlapped:.3f}", f"{comm_total:.3f}", f"{max(0.0, span - busy - comm_total + overlapped):.3f}",
                     f"{span:.3f}", "0.000", f"{comm_total - overlapped:.3f}", "0.000"])
        collectives = {}
        for t in comm_tasks:
            entry = collectives.setdefault(t.name, {"Communication Time Info": {
                "Start Timestamp(us)": t.ts, "Elapse Time(ms)": 0.0, "Transit Time(ms)": 0.0, "Wait Time(ms)": 0.0,
                "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0}, "Count": 0})
            entry["Communication Time Info"]["Elapse Time(ms)"] += t.dur / 1000.0
            entry["Communication Time Info"]["Transit Time(ms)"] += t.dur / 1000.0
            entry["Count"] += 1
        communication[f"step{name or 1}"] = {"collective": collectives, "p2p": {}}
    _write(os.path.join(out, "step_trace_time.csv"), STEP_TRACE_TIME, rows)

    # memory_record.csv and operator_memory.csv from the allocator's events.
    rows = [["PTA", f"{m['ts']:.3f}", _mb(m["allocated"]), _mb(m["reserved"]), _mb(m["allocated"]), "",
             f"NPU:{m['device']}"] for m in trace.memory]
    _write(os.path.join(out, "memory_record.csv"), MEMORY_RECORD, rows)
    live: dict = {}
    rows = []
    for m in trace.memory:
        if m["bytes"] > 0:
            live[m["addr"]] = m
        elif m["addr"] in live:
            a = live.pop(m["addr"])
            op = trace.op_at(a["ts"], a["tid"])
            rows.append([op.name if op else "", f"{a['bytes'] / 1024:.3f}", f"{a['ts']:.3f}", f"{m['ts']:.3f}",
                         f"{m['ts']:.3f}", f"{m['ts'] - a['ts']:.3f}", f"{m['ts'] - a['ts']:.3f}",
                         _mb(a["allocated"]), _mb(a["reserved"]), _mb(a["allocated"]), _mb(m["allocated"]),
                         _mb(m["reserved"]), _mb(m["allocated"]), "", f"NPU:{a['device']}"])
    for a in live.values():
        op = trace.op_at(a["ts"], a["tid"])
        rows.append([op.name if op else "", f"{a['bytes'] / 1024:.3f}", f"{a['ts']:.3f}", "", "", "", "",
                     _mb(a["allocated"]), _mb(a["reserved"]), _mb(a["allocated"]), "", "", "", "",
                     f"NPU:{a['device']}"])
    _write(os.path.join(out, "operator_memory.csv"), OPERATOR_MEMORY, rows)

    # communication.json: per step, the HCCL collectives (simulated times; no p2p split yet).
    with open(os.path.join(out, "communication.json"), "w") as f:
        json.dump(communication, f, indent=1)
    with open(os.path.join(root, f"profiler_info_{rank}.json"), "w") as f:
        json.dump({"config": {"common_config": {"simulator": "npusim"}}, "rank_id": rank}, f, indent=1)
    return out

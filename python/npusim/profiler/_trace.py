"""Reads a torch.profiler chrome trace of an npusim run into the facts the Ascend output files and
the HTML report are made of: host operators (with their parents), device tasks linked to the host
operator that launched them, synchronizations with their source lines, memory events, steps."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class HostOp:
    name: str
    ts: float
    dur: float
    tid: int
    cat: str
    args: dict
    parent: "HostOp | None" = None
    children: list = field(default_factory=list)
    tasks: list = field(default_factory=list)  # device tasks it launched

    @property
    def external_id(self):
        return self.args.get("External id")


@dataclass
class DeviceTask:
    name: str
    ts: float
    dur: float
    stream: int
    device: int
    core: str      # AI_CORE / AI_VECTOR_CORE / AI_CPU / CPU_FALLBACK / DMA
    unit: str
    sim_start: float
    kind: str      # kernel / memcpy
    external_id: int | None
    op: HostOp | None = None
    source: str = ""  # the user's line (AI CPU and fallback kernels)


# How npusim's execution units show as the Accelerator Core of the real stack's files.
_CORE_BY_UNIT = {"Cube": "AI_CORE", "Vector": "AI_VECTOR_CORE", "AI CPU": "AI_CPU", "CPU fallback": "CPU_FALLBACK",
                 "Transfer": "DMA", "None": "AI_CORE", "Communication": "COMMUNICATION"}


class Trace:
    def __init__(self, data: dict):
        self.data = data
        events = data.get("traceEvents", [])
        self.ops: list[HostOp] = []
        self.tasks: list[DeviceTask] = []
        self.syncs: list[dict] = []
        self.memory: list[dict] = []
        self.steps: list[HostOp] = []
        for e in events:
            ph, cat = e.get("ph"), e.get("cat", "")
            if ph == "X" and cat in ("cpu_op", "user_annotation", "python_function"):
                op = HostOp(e.get("name", ""), float(e["ts"]), float(e.get("dur", 0)), e.get("tid", 0), cat,
                            e.get("args", {}) or {})
                self.ops.append(op)
                if cat == "user_annotation" and op.name.startswith("ProfilerStep#"):
                    self.steps.append(op)
            elif ph == "X" and cat in ("kernel", "gpu_memcpy"):
                a = e.get("args", {}) or {}
                unit = a.get("unit", "None")
                self.tasks.append(DeviceTask(e.get("name", ""), float(e["ts"]), float(e.get("dur", 0)),
                                             int(a.get("stream", e.get("tid", 0))), int(a.get("device", 0)),
                                             _CORE_BY_UNIT.get(unit, "AI_CORE") if cat == "kernel" else "DMA",
                                             unit, float(a.get("simulated start us", 0)),
                                             "kernel" if cat == "kernel" else "memcpy", a.get("External id"),
                                             source=a.get("source", "")))
            elif ph == "X" and e.get("name") == "aclrtSynchronizeStream":
                a = e.get("args", {}) or {}
                self.syncs.append({"ts": float(e["ts"]), "cause": a.get("cause", ""), "source": a.get("source", "")})
            elif ph == "i" and e.get("name") == "[memory]":
                a = e.get("args", {}) or {}
                if str(a.get("Device Type")) in ("20", "PrivateUse1", "npu") or a.get("Device Id", -1) >= 0:
                    self.memory.append({"ts": float(e["ts"]), "addr": a.get("Addr"), "bytes": int(a.get("Bytes", 0)),
                                        "allocated": int(a.get("Total Allocated", 0)),
                                        "reserved": int(a.get("Total Reserved", 0)),
                                        "device": a.get("Device Id", 0), "tid": e.get("tid", 0)})
        self.steps.sort(key=lambda s: s.ts)
        if not self.steps:
            self.steps = self._optimizer_steps()
        self._nest()
        by_id = {}
        for op in self.ops:
            if op.cat == "cpu_op" and op.external_id is not None:
                by_id.setdefault(op.external_id, op)
        for task in self.tasks:
            task.op = by_id.get(task.external_id)
            if task.op is not None:
                task.op.tasks.append(task)
        self.tasks.sort(key=lambda t: t.ts)

    @classmethod
    def load(cls, path: str) -> "Trace":
        # torch 2.13's Python tracer can name a frame of a module imported inside the profile
        # with freed memory (not valid UTF-8); such a name must not make the trace unreadable.
        with open(path, "rb") as f:
            return cls(json.loads(f.read().decode("utf-8", errors="replace")))

    def _nest(self) -> None:
        """Parents by time containment per thread (the trace is a forest per thread)."""
        by_tid: dict = {}
        for op in self.ops:
            by_tid.setdefault(op.tid, []).append(op)
        for ops in by_tid.values():
            ops.sort(key=lambda o: (o.ts, -o.dur))
            stack: list[HostOp] = []
            for op in ops:
                while stack and stack[-1].ts + stack[-1].dur < op.ts + op.dur - 1e-3:
                    stack.pop()
                if stack:
                    op.parent = stack[-1]
                    stack[-1].children.append(op)
                stack.append(op)

    def _optimizer_steps(self) -> list:
        """Without a schedule (no ProfilerStep#N), a training step ends with each optimizer step:
        step i runs from the end of optimizer step i-1 to the end of optimizer step i."""
        marks = sorted((op for op in self.ops if op.cat == "user_annotation" and op.name.startswith("Optimizer.step#")),
                       key=lambda o: o.ts)
        if len(marks) < 2:
            return []
        begin = min(op.ts for op in self.ops)
        steps = []
        for i, mark in enumerate(marks, start=1):
            end = mark.ts + mark.dur
            steps.append(HostOp(f"Step#{i}", begin, end - begin, mark.tid, "step", {}))
            begin = end
        return steps

    def step_of(self, ts: float):
        for i, step in enumerate(self.steps):
            if step.ts <= ts <= step.ts + step.dur:
                return int(step.name.split("#", 1)[1]) if "#" in step.name else i
        return None

    def op_at(self, ts: float, tid) -> "HostOp | None":
        """The innermost aten operator running on `tid` at `ts`."""
        best = None
        for op in self.ops:
            if op.cat == "cpu_op" and op.tid == tid and op.ts <= ts <= op.ts + op.dur:
                if best is None or op.dur < best.dur:
                    best = op
        return best

    def call_stack(self, op: HostOp) -> str:
        frames = []
        node = op.parent
        while node is not None:
            if node.cat == "python_function":
                frames.append(node.name)
            node = node.parent
        return "\n".join(frames)

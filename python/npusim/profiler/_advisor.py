"""The advisor: the seed's pitfalls found in a profile, each in plain words with its fix (the checks
of msprof-analyze advisor that a simulator can answer: AICPU Issues, Operator Dynamic Shape Issues,
Synchronize Stream, Operator Dispatch, and the float64/int64 dtype advice)."""

from __future__ import annotations

from ._ascend_output import op_states
from ._trace import Trace

_LIBRARY_MARKERS = ("/torch/", "/npusim/", "<built-in", "site-packages", "<frozen", "runpy")


def user_frame(trace: Trace, op) -> str:
    """The innermost frame of the user's code around `op` (needs with_stack)."""
    node = op.parent if op else None
    while node is not None:
        if node.cat == "python_function" and not any(m in node.name for m in _LIBRARY_MARKERS):
            return node.name
        node = node.parent
    return ""


def findings(trace: Trace, step_count: int) -> list[dict]:
    out = []
    steps = max(step_count, 1)
    fallbacks: dict = {}
    aicpu: dict = {}
    for task in trace.tasks:
        name = task.op.name if task.op else task.name
        if task.core == "CPU_FALLBACK":
            fallbacks.setdefault(name, [0, task.source or user_frame(trace, task.op)])[0] += 1
        elif task.core == "AI_CPU":
            aicpu.setdefault(name, [0, task.source or user_frame(trace, task.op), task.op])[0] += 1
    if fallbacks:
        worst = ", ".join(f"{n} ({c}x{', at ' + s if s else ''})" for n, (c, s) in sorted(fallbacks.items(), key=lambda kv: -kv[1][0])[:5])
        out.append({"title": "CPU fallbacks in the loop", "severity": "high",
                    "text": f"{sum(c for c, _ in fallbacks.values())} operator calls are not supported by the NPU and ran on "
                            f"the host CPU, each with a copy to the host and back and a stall: {worst}.",
                    "fix": "Replace these operators by supported ones (see the placement table), change the dtype they "
                           "run in, or move them out of the training loop."})
    int64_aicpu = {n: v for n, v in aicpu.items() if v[2] is not None and "long int" in (v[2].args.get("Input type") or [])}
    if aicpu:
        listed = ", ".join(f"{n} ({v[0]}x{', at ' + v[1] if v[1] else ''})" for n, v in list(aicpu.items())[:5])
        out.append({"title": "Operators on the AI CPU", "severity": "medium",
                    "text": f"{sum(v[0] for v in aicpu.values())} calls ran on the slow AI CPU instead of the AI Core: {listed}.",
                    "fix": "Use the dtypes and shapes the AI Core supports; fuse or remove these operators."})
    if int64_aicpu:
        out.append({"title": "int64 indices on the AI CPU", "severity": "medium",
                    "text": "Indexing operators with int64 indices ran on the AI CPU: " + ", ".join(int64_aicpu) + ".",
                    "fix": "Change the mode structure, for example from INT64 to INT32 indices (index.to(torch.int32))."})
    item_syncs = [s for s in trace.syncs if "item" in s["cause"]]
    if len(item_syncs) >= steps and item_syncs:
        where = sorted({s["source"] for s in item_syncs if s["source"]})
        out.append({"title": ".item() every step", "severity": "high",
                    "text": f"Tensor.item() synchronized the host with the device {len(item_syncs)} times in {steps} "
                            f"step(s){', at ' + ', '.join(where[:3]) if where else ''}: each one drains the device queue.",
                    "fix": "Keep the values on the device (accumulate the loss in a tensor) and call .item() every N "
                           "steps or only for logging."})
    dynamic = [n for n, s in op_states(trace).items() if s == "dynamic"]
    if dynamic:
        out.append({"title": "Dynamic shapes", "severity": "medium",
                    "text": f"{len(dynamic)} operators ran with changing input shapes ({', '.join(dynamic[:6])}): on the "
                            "NPU each new shape compiles or selects a new kernel.",
                    "fix": "Pad inputs to a few fixed sizes (bucketing) or use drop_last=True in the DataLoader."})
    def has_double_tensor(op) -> bool:  # a Python float argument also shows as "double": only tensors count
        return any(t == "double" and isinstance(d, list) and d
                   for t, d in zip(op.args.get("Input type") or [], op.args.get("Input Dims") or []))

    doubles = sorted({op.name for op in trace.ops if op.cat == "cpu_op" and has_double_tensor(op)})
    if doubles:
        out.append({"title": "float64 tensors", "severity": "medium",
                    "text": "Operators ran in float64, which the NPU does not compute natively: " + ", ".join(doubles[:6]) + ".",
                    "fix": "Use float32 (or bfloat16 with autocast): model.float(), tensor.float()."})
    busy = sum(t.dur for t in trace.tasks)
    if trace.tasks:
        first = min(t.sim_start for t in trace.tasks)
        last = max(t.sim_start + t.dur for t in trace.tasks)
        span = max(last - first, 1e-9)
        if busy / span < 0.5:
            out.append({"title": "Host-bound dispatch", "severity": "medium",
                        "text": f"The device is busy only {100 * busy / span:.0f}% of the simulated step: it waits for the "
                                "host to launch many small operators.",
                        "fix": "Use larger batches, fused operators (torch_npu.npu_* fused kernels, fused optimizers), "
                               "TASK_QUEUE_ENABLE=2, or torch.compile."})
    return out

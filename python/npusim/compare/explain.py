"""Which of the simulated NPU's numerics rules makes a diverging operator differ.

npusim's kernels are PyTorch's CPU kernels; an npu operator differs from the CPU only through
the rules npusim applies as the chip does:

- ``autocast``: ``torch.autocast("npu")`` ran the operator in float16 / bfloat16 (torch_npu's
  cast lists);
- ``hf32``: fp32 matrix products or convolutions read their operands as HF32
  (``torch.npu.matmul.allow_hf32``, ``torch.npu.conv.allow_hf32``; convolutions by default);
- ``saturation``: saturation mode (``INF_NAN_MODE_FORCE_DISABLE=1``, or an Ascend910A) turned
  Inf into the largest finite value and NaN into 0;
- ``float64``: a conversion of an npu tensor to float64 gave float32;
- ``fused kernel``: a torch_npu operator computed its fused kernel instead of the composite of
  its definition.

For each diverging API call the operator is called again (:mod:`.explain_worker`) from the
benchmark's dumped inputs: first with the rules it ran under, then with each rule switched off
in turn, then with all of them off (on the CPU). The rule whose removal makes the result equal
the benchmark's bit for bit is the cause. When the operator already equals the benchmark with
the rules on, its own computation adds nothing: the difference came in through its inputs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

from .divergence import CallDivergence

__all__ = ["Explanation", "explain_calls", "RULES"]

# Operators whose result depends on random numbers (they are not re-run).
_RANDOM_APIS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                "feature_dropout", "native_dropout", "rrelu", "rrelu_", "gumbel_softmax", "bernoulli", "bernoulli_",
                "multinomial", "poisson", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like",
                "randperm", "normal", "normal_", "uniform_", "random_", "exponential_", "cauchy_", "log_normal_",
                "geometric_"}

RULES = {
    "autocast": "autocast",
    "hf32": "HF32",
    "saturation": "saturation mode",
    "float64": "float64 rule",
    "fused": "fused kernel",
}


@dataclasses.dataclass
class Explanation:
    entry: str
    verdict: str  # a RULES key, "inherited", "combined", "unexplained", "random", "not re-run"
    text: str
    variants: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _load(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _variants(call: CallDivergence, record: dict, overflow_mode: str | None) -> tuple[dict, list[str]]:
    autocast = record.get("autocast")
    hf32 = record.get("hf32") or [False, False]
    base = {"device": "npu", "autocast": autocast, "hf32": hf32, "composite": False}
    variants = {"rules on": base}
    rules = []
    if autocast:
        variants["autocast off"] = dict(base, autocast=None)
        rules.append("autocast")
    # HF32 applies to matrix products (matmul switch) and convolutions (conv switch, on by default).
    if hf32[0] or (hf32[1] and "conv" in call.api):
        variants["hf32 off"] = dict(base, hf32=[False, False])
        rules.append("hf32")
    if call.prefix == "NPU":
        variants["fused off"] = dict(base, composite=True)
        rules.append("fused")
    if ("torch.float32", "torch.float64") in call.dtype_pairs:
        # The rule belongs to the npu conversion; the conversion on the host has none.
        variants["float64 off"] = dict(base, device="cpu", composite=True)
        rules.append("float64")
    if overflow_mode == "saturation":
        rules.append("saturation")
    variants["all off"] = {"device": "cpu", "autocast": None, "hf32": [False, False], "composite": True}
    return variants, rules


def _run_worker(job: dict, work_dir: str, name: str, env: dict[str, str]) -> dict:
    job_path = os.path.join(work_dir, f"{name}_job.json")
    result_path = os.path.join(work_dir, f"{name}_result.json")
    with open(job_path, "w", encoding="utf-8") as handle:
        json.dump(job, handle)
    process = subprocess.run([sys.executable, "-m", "npusim.compare.explain_worker", job_path, result_path],
                             env=env, capture_output=True, text=True)
    if process.returncode != 0 or not os.path.isfile(result_path):
        raise RuntimeError(f"the explanation worker failed ({process.returncode}): {process.stderr[-2000:]}")
    return _load(result_path)


def _inf_nan_environment(env: dict[str, str]) -> dict[str, str]:
    changed = dict(env)
    changed.pop("INF_NAN_MODE_FORCE_DISABLE", None)
    changed["INF_NAN_MODE_ENABLE"] = "1"
    if changed.get("NPUSIM_SOC", "").startswith("Ascend910A"):
        # The 910A saturates whatever is set; the same operator on an A2 chip shows INF_NAN mode.
        changed["NPUSIM_SOC"] = "Ascend910B2"
    return changed


def _describe(result: dict | None) -> str:
    if not result:
        return "not run"
    if result.get("error"):
        return f"failed ({result['error']})"
    if result.get("exact"):
        return "equal to the benchmark bit for bit"
    relative, absolute = result.get("relative"), result.get("max_abs")
    text = "differs"
    if relative is not None:
        text += f" (relative L2 difference {relative:.3g}, max abs error {absolute:.3g})"
    if result.get("note"):
        text += f" ({result['note']})"
    return text


def _interpret(call: CallDivergence, results: dict[str, dict], rules: list[str], record: dict) -> Explanation:
    base = results.get("rules on", {})
    if base.get("error"):
        return Explanation(call.entry, "not re-run", f"the call could not be re-run: {base['error']}", results)
    if base.get("exact"):
        return Explanation(call.entry, "inherited",
                           "with the benchmark's inputs and the NPU's rules this call equals the benchmark bit for "
                           "bit: its own computation adds nothing, the difference came in through its inputs "
                           f"(input difference {call.input_error:.3g})" if call.input_error is not None else
                           "with the benchmark's inputs and the NPU's rules this call equals the benchmark bit for "
                           "bit: the difference came in through its inputs", results)
    causes = [rule for rule in rules if results.get(f"{rule} off", {}).get("exact")]
    details = {
        "autocast": lambda: f"autocast ran it in {record.get('autocast', '').replace('torch.', '')}",
        "hf32": lambda: "HF32 rounded its fp32 operands (matmul {}, conv {})".format(*(record.get('hf32') or [0, 0])),
        "saturation": lambda: "saturation mode replaced Inf/NaN in its result",
        "float64": lambda: "the float64 rule gave float32 where the CPU gives float64",
        "fused": lambda: f"torch_npu.{call.api}'s fused kernel computes differently from its composite",
    }
    if causes:
        names = " and ".join(RULES[cause] for cause in causes)
        reasons = "; ".join(details[cause]() for cause in causes)
        return Explanation(call.entry, causes[0],
                           f"{names}: {reasons}; with it switched off the call equals the benchmark bit for bit "
                           f"(with it on: {_describe(base)})", results)
    if results.get("all off", {}).get("exact"):
        active = " + ".join(RULES[rule] for rule in rules) or "the npu's rules"
        return Explanation(call.entry, "combined",
                           f"no single rule: only with all of them off ({active}) does the call equal the benchmark",
                           results)
    return Explanation(call.entry, "unexplained",
                       "with every npusim rule off the call still differs from the CPU benchmark "
                       f"({_describe(results.get('all off'))}): npusim's kernel differs from the CPU's here", results)


def explain_calls(calls: list[CallDivergence], npu_rank_dir: str, bench_tensor_rank_dir: str, work_dir: str,
                  env: dict[str, str] | None = None) -> list[Explanation]:
    """Explains the diverging API calls ``calls`` (forward), re-running them from the benchmark
    dump ``bench_tensor_rank_dir`` (task tensor) with the numerics recorded in
    ``npu_rank_dir``."""
    os.makedirs(work_dir, exist_ok=True)
    env = dict(os.environ if env is None else env)
    numerics = _load(os.path.join(npu_rank_dir, "npusim_numerics.json"))
    records = numerics.get("calls", {})
    overflow_mode = numerics.get("overflow_mode")
    bench = _load(os.path.join(bench_tensor_rank_dir, "dump.json")).get("data", {})
    data_dir = os.path.join(bench_tensor_rank_dir, "dump_tensor_data")
    operators, saturation_operators, plans, explanations = [], [], {}, {}
    for call in calls:
        entry = bench.get(call.entry)
        if call.kind != "api" or call.direction != "forward":
            continue
        if call.api in _RANDOM_APIS:
            explanations[call.entry] = Explanation(
                call.entry, "random", "a random operator: its result depends on the random numbers each run drew, "
                "which a re-run from the dumped inputs cannot reproduce", {})
            continue
        if entry is None or "output" not in entry:
            explanations[call.entry] = Explanation(call.entry, "not re-run",
                                                   "the benchmark dump has no tensors of this call", {})
            continue
        record = records.get(call.entry, {})
        variants, rules = _variants(call, record, overflow_mode)
        plans[call.entry] = (rules, record)
        operator = {"entry": call.entry, "prefix": call.prefix, "api": call.api, "args": entry.get("input_args", []),
                    "kwargs": entry.get("input_kwargs", {}), "outputs": entry.get("output", []),
                    "data_dir": data_dir, "variants": variants}
        operators.append(operator)
        if "saturation" in rules:
            saturation_operators.append(dict(operator, variants={"saturation off": variants["rules on"]}))
    results: dict[str, dict] = {}
    if operators:
        results = _run_worker({"operators": operators}, work_dir, "explain", env)
    if saturation_operators:
        extra = _run_worker({"operators": saturation_operators}, work_dir, "explain_inf_nan",
                            _inf_nan_environment(env))
        for entry, variants in extra.items():
            results.setdefault(entry, {}).update(variants)
    for call in calls:
        if call.entry in plans and call.entry not in explanations:
            rules, record = plans[call.entry]
            explanations[call.entry] = _interpret(call, results.get(call.entry, {}), rules, record)
    return [explanations[call.entry] for call in calls if call.entry in explanations]

"""``npusim compare [--steps N] [--tensors] [--output DIR] SCRIPT [ARGS...]``.

1. The program runs twice, each in its own process (:mod:`.runner`): on the simulated NPU, and as
   the CPU benchmark (:mod:`.bench_device`), both dumped in msprobe's layout under
   ``DIR/npu_dump`` and ``DIR/bench_dump`` (``--tensors``: with every tensor, task ``tensor``).
2. Every step both runs completed is compared as msprobe's ``compare`` does:
   ``DIR/compare_result_step{N}_{time}.csv`` (and ``.xlsx`` with openpyxl).
3. The diverging API calls of the first diverging step (up to ``--explain``) are re-run with each
   numerics rule switched off (:mod:`.explain`); without ``--tensors`` the benchmark runs a third
   time first, dumping the tensors of just those calls (msprobe's ``list``), as one would with
   msprobe after a statistics pass.
4. ``DIR/compare_report.html``: the verdict, the first diverging operator with its source line and
   cause, the loss curves, the diverging operators and the layers ranked by divergence.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

__all__ = ["add_subcommand", "run_compare"]

_OWN_FOLDERS = ("npu_dump", "bench_dump", "bench_tensors", "explain")


def add_subcommand(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "compare",
        help="dump a program on the simulated NPU and on a CPU fp32 benchmark, compare them as msprobe does, "
             "and say which NPU numerics rule makes each difference",
        description="Run SCRIPT with ARGS twice (simulated NPU, CPU benchmark), dump both in msprobe's layout, write "
                    "msprobe's compare_result CSV and an HTML report, and explain the diverging operators.")
    parser.add_argument("--steps", type=_positive, default=None, metavar="N",
                        help="stop each run after N training steps (a step ends at optimizer.step())")
    parser.add_argument("--tensors", action="store_true", help="dump every tensor too (msprobe task 'tensor')")
    parser.add_argument("--output", default="npusim_compare", metavar="DIR", help="where the dumps and results go")
    parser.add_argument("--level", choices=["mix", "L1", "L0"], default="mix",
                        help="msprobe level: APIs and modules (mix, default), APIs (L1) or modules (L0)")
    parser.add_argument("--explain", type=int, default=10, metavar="K",
                        help="re-run up to K diverging operators to name their cause (0: none; default 10)")
    parser.add_argument("script", metavar="SCRIPT", help="the Python program")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")
    parser.set_defaults(handler=run_compare)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--steps expects a whole number of training steps, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--steps must be at least 1, got {value}")
    return value


def _say(text: str) -> None:
    print(f"[npusim compare] {text}", file=sys.stderr, flush=True)


def _child_environment() -> dict[str, str]:
    env = dict(os.environ)
    # The folder that holds the npusim package (this file is npusim/compare/command.py).
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [package_root] + [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _run(role: str, options: argparse.Namespace, dump_path: str, env: dict[str, str], task: str,
         level: str, api_list: list[str] | None = None, steps: int | None = None,
         dump_steps: list[int] | None = None) -> dict[str, Any]:
    spec = {"role": role, "script": os.path.abspath(options.script), "args": list(options.args),
            "dump_path": dump_path, "task": task, "level": level, "steps": steps}
    if api_list:
        spec["list"] = api_list
    if dump_steps is not None:
        spec["dump_steps"] = dump_steps
    os.makedirs(dump_path, exist_ok=True)
    spec_path = os.path.join(dump_path, "run_spec.json")
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle, indent=1)
    process = subprocess.run([sys.executable, "-m", "npusim.compare.runner", spec_path], env=env)
    info_path = os.path.join(dump_path, "run_info.json")
    info: dict[str, Any] = {"exit_code": process.returncode, "losses": [], "steps_completed": 0}
    if os.path.isfile(info_path):
        with open(info_path, encoding="utf-8") as handle:
            info = json.load(handle)
    return info


def _rank_folders(dump_path: str, step: int) -> dict[str, str]:
    folder = os.path.join(dump_path, f"step{step}")
    if not os.path.isdir(folder):
        return {}
    return {name: os.path.join(folder, name) for name in sorted(os.listdir(folder))
            if os.path.isfile(os.path.join(folder, name, "dump.json"))}


def _pairs(npu_path: str, bench_path: str, step: int) -> list[tuple[str, str, str]]:
    """(suffix, npu folder, bench folder) of one step: rank{R} folders pair by name, the single
    proc{pid} folder of each run with the other's."""
    npu, bench = _rank_folders(npu_path, step), _rank_folders(bench_path, step)
    pairs = [(f"_{name}", npu[name], bench[name]) for name in npu if name.startswith("rank") and name in bench]
    procs_npu = [path for name, path in npu.items() if name.startswith("proc")]
    procs_bench = [path for name, path in bench.items() if name.startswith("proc")]
    if len(procs_npu) == 1 and len(procs_bench) == 1:
        pairs.append(("", procs_npu[0], procs_bench[0]))
    return pairs


def _steps_of(dump_path: str) -> list[int]:
    if not os.path.isdir(dump_path):
        return []
    steps = []
    for name in os.listdir(dump_path):
        if name.startswith("step") and name[4:].isdigit():
            steps.append(int(name[4:]))
    return sorted(steps)


def run_compare(options: argparse.Namespace) -> int:
    if not os.path.isfile(options.script):
        print(f"npusim compare: can't open file '{options.script}': No such file or directory", file=sys.stderr)
        return 2
    if options.args and options.args[0] == "--":
        options.args = options.args[1:]
    output = os.path.abspath(options.output)
    os.makedirs(output, exist_ok=True)
    for folder in _OWN_FOLDERS:
        shutil.rmtree(os.path.join(output, folder), ignore_errors=True)
    env = _child_environment()
    task = "tensor" if options.tensors else "statistics"
    npu_path, bench_path = os.path.join(output, "npu_dump"), os.path.join(output, "bench_dump")

    _say(f"run 1/2: {options.script} on the simulated NPU -> {npu_path}")
    npu_info = _run("npu", options, npu_path, env, task, options.level, steps=options.steps)
    _say(f"run 2/2: {options.script} on the CPU (fp32 benchmark) -> {bench_path}")
    bench_info = _run("bench", options, bench_path, env, task, options.level, steps=options.steps)
    for label, info in (("simulated NPU", npu_info), ("CPU benchmark", bench_info)):
        if info.get("exit_code"):
            _say(f"the {label} run ended with exit code {info['exit_code']}; comparing what it dumped")

    from .compare_table import compare_dumps, write_table
    from .divergence import analyse, first_diverging

    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
    tables, step_calls = [], {}
    rows = 0
    for step in sorted(set(_steps_of(npu_path)) & set(_steps_of(bench_path))):
        for suffix, npu_folder, bench_folder in _pairs(npu_path, bench_path, step):
            table = compare_dumps(npu_folder, bench_folder)
            if not table.rows:
                continue
            tables.extend(write_table(table, output, f"_step{step}{suffix}", stamp))
            rows += len(table.rows)
            step_calls[(step, suffix)] = (analyse(table), npu_folder)
    if not step_calls:
        _say("nothing to compare: the runs dumped no common step")
        return 1

    first, first_key = None, None
    for key in sorted(step_calls):
        found = first_diverging(step_calls[key][0])
        if found is not None:
            first, first_key = found, key
            break
    # Without a call beyond msprobe's thresholds, the small differences still get their cause.
    explain_key = first_key or next((key for key in sorted(step_calls)
                                     if any(not call.exact and call.kind == "api" for call in step_calls[key][0])), None)
    explanations = []
    if explain_key is not None and options.explain > 0:
        explanations = _explain(options, explain_key, step_calls, env, output, task, bench_path)

    all_calls = [call for key in sorted(step_calls) for call in step_calls[key][0]]
    summary = _summary(options, step_calls, first, first_key, explanations, npu_info, bench_info, tables, rows)
    report_path = os.path.join(output, "compare_report.html")
    try:
        from .report import build_page

        calls_for_page = step_calls[first_key][0] if first_key else all_calls
        page = build_page(summary, calls_for_page, first, explanations, npu_info.get("losses", []),
                          bench_info.get("losses", []))
        with open(report_path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except ImportError as error:
        report_path = None
        _say(f"no HTML report ({error}: pip install plotly)")
    with open(os.path.join(output, "explanations.json"), "w", encoding="utf-8") as handle:
        json.dump([explanation.to_json() for explanation in explanations], handle, indent=1)
    _say(summary["verdict"])
    _say(summary["description"])
    for path in tables:
        _say(f"compare table: {path}")
    if report_path:
        _say(f"report: {report_path}")
    return 0


def _explain(options, key, step_calls, env, output, task, bench_path) -> list:
    from .explain import explain_calls

    step, suffix = key
    calls, npu_folder = step_calls[key]
    # The diverging calls first, then those that differ within msprobe's thresholds.
    apis = sorted((call for call in calls if call.kind == "api" and call.direction == "forward"),
                  key=lambda call: call.order)
    chosen = [call for call in apis if call.diverging]
    chosen += [call for call in apis if not call.diverging and not call.exact]
    chosen = chosen[:options.explain]
    if not chosen:
        return []
    if task == "tensor":
        tensor_path = bench_path
    else:
        tensor_path = os.path.join(output, "bench_tensors")
        _say(f"dumping the tensors of {len(chosen)} diverging operators on the benchmark -> {tensor_path}")
        _run("bench", options, tensor_path, env, "tensor", "L1", api_list=[call.entry for call in chosen],
             steps=step + 1, dump_steps=[step])
    pairs = _pairs(tensor_path, tensor_path, step)
    bench_folder = next((folder for name, folder, _ in pairs if name == suffix), None)
    if bench_folder is None:
        _say("the benchmark's tensor dump is missing: no explanation")
        return []
    _say(f"re-running {len(chosen)} operators with each numerics rule switched off")
    try:
        return explain_calls(chosen, npu_folder, bench_folder, os.path.join(output, "explain"), env)
    except RuntimeError as error:
        _say(str(error))
        return []


def _summary(options, step_calls, first, first_key, explanations, npu_info, bench_info, tables, rows) -> dict:
    all_calls = [call for key in sorted(step_calls) for call in step_calls[key][0]]
    diverging = [call for call in all_calls if call.diverging]
    exact = all(call.exact for call in all_calls)
    by_entry = {explanation.entry: explanation for explanation in explanations}
    if first is not None:
        explanation = by_entry.get(first.entry)
        in_step = [call for call in step_calls[first_key][0] if call.diverging]
        verdict = (f"{len(in_step)} dumped calls of step {first_key[0]} diverge beyond msprobe's thresholds "
                   f"({len(diverging)} in all steps); the first operator is {first.entry}")
        description = f"at {first.source or 'no user frame'}: " + (
            explanation.text if explanation else "; ".join(first.reasons))
    elif exact:
        verdict = "every dumped value matches the CPU benchmark bit for bit"
        description = f"{len(all_calls)} calls in {len(step_calls)} step(s), {rows} values, all identical"
    else:
        differing = [call for call in all_calls if not call.exact]
        verdict = "no operator goes beyond msprobe's thresholds"
        description = (f"{len(differing)} calls differ slightly; the first is {differing[0].entry}"
                       if differing else "nothing differs")
        causes = [f"{explanation.entry}: {explanation.text}" for explanation in explanations
                  if explanation.verdict != "inherited"]
        if causes:
            description += ". " + " | ".join(causes)
    facts = [
        ("Program", " ".join([options.script, *options.args])),
        ("Steps compared", ", ".join(str(key[0]) + key[1] for key in sorted(step_calls))),
        ("Simulated NPU run", f"exit code {npu_info.get('exit_code')}, {npu_info.get('steps_completed', 0)} steps"),
        ("CPU benchmark run", f"exit code {bench_info.get('exit_code')}, {bench_info.get('steps_completed', 0)} steps"),
        ("Values compared", str(rows)),
        ("Diverging calls", str(len(diverging))),
    ]
    return {"verdict": verdict, "description": description, "facts": facts, "tables": tables}

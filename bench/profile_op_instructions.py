"""Instructions per call of small operators on npu and on plain CPU PyTorch, counted by callgrind.

Wall-clock benchmarks (bench_op_overhead.py) need a quiet machine; instruction counts do not:
valgrind's callgrind counts the instructions a loop of calls executes, the same on every run
whatever else the machine does. For each operator of bench_op_overhead.py (or those named with
--ops) the loop runs once on cpu and once on npu under callgrind, counting only the loop itself
(a small helper library switches the counting on and off through callgrind's client requests;
it is compiled with the system C compiler on first use). The output is the instructions per call
on each device, their ratio, and with --top the functions where npu spends the most instructions
per call more than cpu (self cost), which is where the overhead goes.

Needs valgrind (``apt-get install valgrind``) and a C compiler with valgrind's headers.
Slow (valgrind starts the interpreter once per device, then about 10 s per operator); not part
of run_all.py.

With ``--before DIR`` (the python/ directory of another npusim build, e.g. main's) the npu loop
also runs on that build, and the table shows its instructions per call next to this one's: the
before-and-after of a change to the hot path, without a quiet machine.

Usage: python bench/profile_op_instructions.py [--ops add,mul] [--calls 2000] [--top 15] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from bench_op_overhead import OPERATORS  # noqa: E402

HELPER_SOURCE = r"""
#include <valgrind/callgrind.h>
void npusim_bench_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void npusim_bench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""

CHILD = r"""
import ctypes, json, sys
import torch
import npusim  # noqa: F401
sys.path.insert(0, sys.argv[5])
from bench_op_overhead import make_namespace
torch.set_num_threads(1)
helper = ctypes.CDLL(sys.argv[1])
device, statements, calls = sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
for statement in statements:  # one profile dump per statement, numbered from 1
    namespace = make_namespace(torch, device, 16)
    exec(compile(f"for _ in range(300):\n    {statement}\n", "warm-up", "exec"), namespace)
    loop = compile(f"for _ in range({calls}):\n    {statement}\n", "loop", "exec")
    helper.npusim_bench_start()
    exec(loop, namespace)
    helper.npusim_bench_stop()
"""


def build_helper(directory: str) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler found (needed for the callgrind client-request helper)")
    source = os.path.join(directory, "callgrind_helper.c")
    library = os.path.join(directory, "libcallgrind_helper.so")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(HELPER_SOURCE)
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return library


def run_callgrind(helper: str, device: str, statements: list[str], calls: int, directory: str,
                  python_dir: str | None = None) -> list[str]:
    """Runs the loop of each statement under callgrind in one process (the interpreter and torch
    start once); returns the paths of the profiles of the loops, in order. ``python_dir``: the
    npusim build to import (default: the one the benchmarks use)."""
    prefix = os.path.join(directory, f"callgrind.{device}")
    if python_dir is None:
        env = _common.subprocess_env()  # PYTHONPATH reaches the same npusim
    else:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(python_dir), _common.EXAMPLES_DIR]))
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={prefix}.%p",
               sys.executable, "-c", CHILD, helper, device, json.dumps(statements), str(calls),
               os.path.dirname(os.path.abspath(__file__))]
    completed = subprocess.run(command, env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"callgrind run failed ({device}):\n{completed.stderr[-3000:]}")
    dumps = {}
    for name in os.listdir(directory):
        match = re.match(rf"callgrind\.{device}\.\d+\.(\d+)$", name)
        if match:
            dumps[int(match.group(1))] = os.path.join(directory, name)
    if sorted(dumps) != list(range(1, len(statements) + 1)):
        raise RuntimeError(f"expected {len(statements)} profiles, found {sorted(dumps.values())}")
    return [dumps[number] for number in range(1, len(statements) + 1)]


def self_costs(profile: str) -> tuple[int, dict[str, int]]:
    """Total instructions and instructions by function (self cost) of a callgrind profile."""
    output = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", profile],
                            capture_output=True, text=True, check=True).stdout
    total, by_function = 0, {}
    for line in output.splitlines():
        match = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", line)
        if not match:
            continue
        count, name = int(match.group(1).replace(",", "")), match.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = count
            continue
        name = re.sub(r"^\S*:", "", name, count=1) if not name.startswith("???") else name[4:]
        name = re.sub(r" \[[^\]]*\]$", "", name)
        by_function[name] = by_function.get(name, 0) + count
    return total, by_function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default="", help="comma-separated operator names of bench_op_overhead.py")
    parser.add_argument("--calls", type=int, default=2000, help="calls in the counted loop (default 2000)")
    parser.add_argument("--top", type=int, default=0, help="show the N functions with the most added instructions")
    parser.add_argument("--before", default="", help="python/ directory of another npusim build to count as well")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    wanted = [name.strip() for name in args.ops.split(",") if name.strip()]
    operators = {name: spec for name, spec in OPERATORS.items() if not wanted or name in wanted}
    print(f"npusim from {_common.npusim_location()}")
    if args.before:
        print(f"before: npusim from {os.path.abspath(args.before)}")
    print(f"instructions per call, {args.calls} calls counted by callgrind, 16-element float32 tensors")
    runs = [("cpu", "cpu", None), ("npu", "npu", None)] + ([("before", "npu", args.before)] if args.before else [])
    rows, ratios, before_ratios = [], [], []
    with tempfile.TemporaryDirectory(prefix="npusim-callgrind-") as directory:
        helper = build_helper(directory)
        statements = [statement for statement, _ in operators.values()]
        profiles = {}
        for run, device, python_dir in runs:
            profiles[run] = [self_costs(profile) for profile in run_callgrind(
                helper, device, statements, args.calls, tempfile.mkdtemp(dir=directory), python_dir)]
        for index, (name, (statement, path)) in enumerate(operators.items()):
            per_device = {run: profiles[run][index] for run in profiles}
            cpu, npu = per_device["cpu"][0] / args.calls, per_device["npu"][0] / args.calls
            ratios.append(npu / cpu)
            row = [name, path, f"{cpu:,.0f}"]
            if args.before:
                before = per_device["before"][0] / args.calls
                before_ratios.append(before / cpu)
                row += [f"{before:,.0f}", f"{before / cpu:.2f}x"]
            rows.append(row + [f"{npu:,.0f}", f"{npu - cpu:+,.0f}", f"{npu / cpu:.2f}x"])
            if args.top:
                added = {fn: (per_device["npu"][1].get(fn, 0) - per_device["cpu"][1].get(fn, 0)) / args.calls
                         for fn in set(per_device["npu"][1]) | set(per_device["cpu"][1])}
                print(f"--- {name}: functions by instructions added per call (npu - cpu, self cost)")
                for fn, count in sorted(added.items(), key=lambda item: -abs(item[1]))[:args.top]:
                    print(f"  {count:+8,.0f}  {fn[:150]}")
    header = ["operator", "npu path", "cpu instr"] + (["before instr", "before/cpu"] if args.before else [])
    _common.print_table(header + ["npu instr", "added", "npu/cpu"], rows)
    if args.before:
        print(f"before: geometric mean of {len(before_ratios)} instruction ratios: "
              f"{_common.geometric_mean(before_ratios):.2f}x; worst {max(before_ratios):.2f}x")
    print(f"geometric mean of {len(ratios)} instruction ratios: {_common.geometric_mean(ratios):.2f}x; "
          f"worst {max(ratios):.2f}x")


if __name__ == "__main__":
    main()

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
Slow (about 30 s per operator and device); not part of run_all.py.

Usage: python bench/profile_op_instructions.py [--ops add,mul] [--calls 2000] [--top 15]
"""

from __future__ import annotations

import argparse
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
import ctypes, sys
import torch
import npusim  # noqa: F401
sys.path.insert(0, sys.argv[5])
from bench_op_overhead import make_namespace
torch.set_num_threads(1)
helper = ctypes.CDLL(sys.argv[1])
device, statement, calls = sys.argv[2], sys.argv[3], int(sys.argv[4])
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


def run_callgrind(helper: str, device: str, statement: str, calls: int, directory: str) -> str:
    """Runs the loop under callgrind; returns the path of the profile of the loop."""
    prefix = os.path.join(directory, f"callgrind.{device}")
    env = _common.subprocess_env()  # PYTHONPATH reaches the same npusim
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={prefix}.%p",
               sys.executable, "-c", CHILD, helper, device, statement, str(calls),
               os.path.dirname(os.path.abspath(__file__))]
    completed = subprocess.run(command, env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"callgrind run failed ({device}, {statement}):\n{completed.stderr[-3000:]}")
    dumps = [os.path.join(directory, name) for name in os.listdir(directory)
             if name.startswith(f"callgrind.{device}.") and name.endswith(".1")]
    if len(dumps) != 1:
        raise RuntimeError(f"expected one profile of the loop, found {dumps}")
    return dumps[0]


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
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    wanted = [name.strip() for name in args.ops.split(",") if name.strip()]
    operators = {name: spec for name, spec in OPERATORS.items() if not wanted or name in wanted}
    print(f"npusim from {_common.npusim_location()}")
    print(f"instructions per call, {args.calls} calls counted by callgrind, 16-element float32 tensors")
    rows, ratios = [], []
    with tempfile.TemporaryDirectory(prefix="npusim-callgrind-") as directory:
        helper = build_helper(directory)
        for name, (statement, path) in operators.items():
            per_device = {}
            for device in ("cpu", "npu"):
                run_directory = tempfile.mkdtemp(dir=directory)
                profile = run_callgrind(helper, device, statement, args.calls, run_directory)
                per_device[device] = self_costs(profile)
            cpu, npu = per_device["cpu"][0] / args.calls, per_device["npu"][0] / args.calls
            ratios.append(npu / cpu)
            rows.append([name, path, f"{cpu:,.0f}", f"{npu:,.0f}", f"{npu - cpu:+,.0f}", f"{npu / cpu:.2f}x"])
            if args.top:
                added = {fn: (per_device["npu"][1].get(fn, 0) - per_device["cpu"][1].get(fn, 0)) / args.calls
                         for fn in set(per_device["npu"][1]) | set(per_device["cpu"][1])}
                print(f"--- {name}: functions by instructions added per call (npu - cpu, self cost)")
                for fn, count in sorted(added.items(), key=lambda item: -abs(item[1]))[:args.top]:
                    print(f"  {count:+8,.0f}  {fn[:150]}")
    _common.print_table(["operator", "npu path", "cpu instr", "npu instr", "added", "npu/cpu"], rows)
    print(f"geometric mean of {len(ratios)} instruction ratios: {_common.geometric_mean(ratios):.2f}x; "
          f"worst {max(ratios):.2f}x")


if __name__ == "__main__":
    main()

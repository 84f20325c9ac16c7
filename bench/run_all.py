"""Runs the npusim Python benchmarks one after another and collects their TARGET lines.

Each benchmark runs in its own process (as `python bench/<name>.py`), so that one's imports,
allocator caches and threads cannot affect another. ``--quick`` is forwarded to each.
No timing is asserted: the exit status is non-zero only if a benchmark itself fails.

Usage: python bench/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = (
    "bench_op_overhead.py",
    "bench_training_step.py",
    "bench_recurrent.py",
    "bench_amp_training.py",
    "bench_peak_memory.py",
    "bench_import_time.py",
    "bench_migrate.py",
    "bench_allreduce.py",
    "bench_fused_ops.py",
    "bench_torch_npu_hook.py",
    "bench_compile.py",
    "bench_alloc_path.py",
    "bench_profiler.py",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="forward --quick to every benchmark")
    args = parser.parse_args()
    forwarded = ["--quick"] if args.quick else []

    targets, failures = [], []
    for name in BENCHMARKS:
        print(f"=== {name} {' '.join(forwarded)}".rstrip(), flush=True)
        start = time.perf_counter()
        completed = subprocess.run([sys.executable, os.path.join(BENCH_DIR, name), *forwarded],
                                   stdout=subprocess.PIPE, text=True)
        print(completed.stdout, end="", flush=True)
        print(f"({time.perf_counter() - start:.0f} s)\n", flush=True)
        if completed.returncode != 0:
            failures.append(f"{name} exited with {completed.returncode}")
        targets += [line for line in completed.stdout.splitlines() if line.startswith("TARGET ")]

    print("=== summary")
    for line in targets:
        print(line)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

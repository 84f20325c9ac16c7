"""Shared helpers of the npusim Python benchmarks (not a benchmark itself).

Every benchmark compares npusim's ``npu`` device with plain CPU PyTorch measured in the same
run and reports ratios; none asserts on time. The helpers here find the npusim package (the
build tree's ``python/`` directory when npusim is not installed), compute medians and
geometric means, and print the final ``TARGET ...`` line of each benchmark.
"""

from __future__ import annotations

import math
import os
import statistics
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The directory holding the npusim package to benchmark: this checkout's python/, or
# NPUSIM_BENCH_PYTHON_DIR (e.g. a copy of python/ taken while the build tree is being rebuilt).
PYTHON_DIR = os.path.abspath(os.environ.get("NPUSIM_BENCH_PYTHON_DIR") or os.path.join(REPO_ROOT, "python"))
EXAMPLES_DIR = os.path.join(REPO_ROOT, "examples")


def use_build_tree() -> bool:
    """Whether to run npusim from this checkout's python/ directory (where the build puts the
    extension) rather than from an installed npusim: yes when python/npusim holds the built
    extension, unless NPUSIM_BENCH_INSTALLED=1 asks for the installed package."""
    if os.environ.get("NPUSIM_BENCH_INSTALLED") == "1":
        return False
    package = os.path.join(PYTHON_DIR, "npusim")
    return os.path.isdir(package) and any(name.startswith("_C.") for name in os.listdir(package))


def ensure_npusim_on_path() -> None:
    """Puts the build tree's python/ directory first on sys.path (see use_build_tree)."""
    if use_build_tree() and (not sys.path or sys.path[0] != PYTHON_DIR):
        sys.path.insert(0, PYTHON_DIR)


def subprocess_env(**overrides: str) -> dict[str, str]:
    """The environment for a child Python: PYTHONPATH reaches the same npusim and the examples."""
    env = dict(os.environ)
    parts = ([PYTHON_DIR] if use_build_tree() else []) + [EXAMPLES_DIR]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.update(overrides)
    return env


def npusim_location() -> str:
    """Where the npusim that the benchmarks use comes from (without importing torch)."""
    import importlib.util

    ensure_npusim_on_path()
    spec = importlib.util.find_spec("npusim")
    if spec is None or spec.origin is None:
        return "npusim not found"
    return os.path.dirname(spec.origin)


def import_torch_and_npusim(threads: int | None):
    """Imports torch and npusim (in that order) and sets the intra-op thread count."""
    ensure_npusim_on_path()
    import torch
    import npusim  # noqa: F401  (registers the npu device when autoload did not)

    if threads is not None and threads > 0:
        torch.set_num_threads(threads)
    return torch


def median(values) -> float:
    return statistics.median(values)


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def target_line(name: str, value: float, limit: float, unit: str = "x") -> str:
    """``TARGET <name>: 1.62x (target <= 2.0x) MET`` (or MISSED)."""
    verdict = "MET" if value <= limit else "MISSED"
    # One decimal unless the limit needs more (1.05x, 0.06 s).
    shown = f"{limit:.1f}" if abs(limit * 10 - round(limit * 10)) < 1e-9 else f"{limit:.2f}"
    if unit == "x":
        return f"TARGET {name}: {value:.2f}x (target <= {shown}x) {verdict}"
    return f"TARGET {name}: {value:.3f} {unit} (target <= {shown} {unit}) {verdict}"


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join(str(h).ljust(w) if i == 0 else str(h).rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))))

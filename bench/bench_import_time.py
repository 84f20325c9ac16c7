"""Time that npusim adds to ``import torch``.

When npusim is pip-installed, PyTorch loads it on ``import torch`` through the
``torch.backends`` entry point (``npusim = npusim:_autoload``), and
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off. The benchmark times ``import torch`` in
fresh interpreters with autoload on and with it off, alternating the two, and reports the
median difference.

When the entry point is not installed (npusim used from the build tree with PYTHONPATH),
autoload cannot happen; the benchmark then times ``import torch; import npusim`` against
plain ``import torch`` (both with the same PYTHONPATH), which is the same work done
explicitly, and says so in its output (``--mode explicit`` forces this variant).
Either way, the npusim loaded is the checkout's python/ build when it holds the built
extension (see ``_common.use_build_tree``; ``NPUSIM_BENCH_INSTALLED=1`` for the installed one).

The children run with bytecode caching on, as an installed npusim does (pip writes its .pyc
files at install): PYTHONDONTWRITEBYTECODE in the caller's environment would otherwise make
npusim's sources compile in every child while torch's installed .pyc files are used, which
charged npusim some 20 ms of compiling. The cache goes to a temporary PYTHONPYCACHEPREFIX
(torch's and npusim's alike, filled by the untimed first runs), never into the checkout.

The time is measured inside the child with ``time.perf_counter`` around the import (so
interpreter start-up is excluded); the import's CPU time and the wall time of the whole
process are shown too. Each round runs one process of each variant back to back, and the
result is the median of the per-round differences (which cancels slow drift of the load on
the machine); the CPU-time difference is a cross-check less sensitive to other processes.

    TARGET import time added: 0.045 s (target <= 0.06 s) MET

Usage: python bench/bench_import_time.py [--quick] [--runs N] [--mode auto|autoload|explicit]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

# What npusim may add to ``import torch`` (issue 26: 60 ms).
TARGET_SECONDS = 0.06

CHILD = r"""
import json, sys, time
start, start_cpu = time.perf_counter(), time.process_time()
import torch
if sys.argv[1] == "explicit":
    import npusim
elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
loaded = "npusim" in sys.modules
print("RESULT " + json.dumps({"import_s": elapsed, "cpu_s": elapsed_cpu,
                              "npu": loaded and hasattr(torch, "npu") and torch.npu.is_available()}))
"""


def npusim_entry_point_installed() -> bool:
    entry_points = importlib.metadata.entry_points(group="torch.backends")
    return any(entry.name == "npusim" for entry in entry_points)


def run_child(mode: str, env: dict) -> tuple[float, float, float, bool]:
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            return result["import_s"], result["cpu_s"], wall, result["npu"]
    raise RuntimeError(f"child ({mode}) failed (rc {completed.returncode}):\n{completed.stderr[-2000:]}")


def measure(variants: dict, runs: int) -> dict:
    """Alternating fresh processes of each variant, after one untimed run of each (it fills the
    page cache and the bytecode cache)."""
    for mode, env in variants.values():
        run_child(mode, env)
    samples = {name: {"import": [], "cpu": [], "wall": [], "npu": []} for name in variants}
    for r in range(runs):
        # One pair per round, run back to back; the order alternates between rounds.
        names = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in names:
            mode, env = variants[name]
            imported, cpu, wall, npu = run_child(mode, env)
            samples[name]["import"].append(imported)
            samples[name]["cpu"].append(cpu)
            samples[name]["wall"].append(wall)
            samples[name]["npu"].append(npu)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs (about 15 s)")
    parser.add_argument("--runs", type=int, default=None, help="processes per variant (default 11, quick 5)")
    parser.add_argument("--mode", choices=("auto", "autoload", "explicit"), default="auto",
                        help="autoload: entry point on vs off; explicit: `import torch; import npusim` vs "
                        "`import torch`; auto (default): autoload when the entry point is installed")
    args = parser.parse_args()
    runs = args.runs or (5 if args.quick else 11)

    installed = npusim_entry_point_installed()
    if args.mode == "autoload" and not installed:
        parser.error("--mode autoload needs npusim's torch.backends entry point (pip install npusim)")
    if args.mode == "autoload" or (args.mode == "auto" and installed):
        # The entry point names the module npusim; PYTHONPATH decides which npusim it loads.
        mode_note = (
            "npusim's torch.backends entry point is installed: `import torch` with autoload on vs "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0"
        )
        autoload_env = _common.subprocess_env()
        autoload_env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
        variants = {
            "with npusim": ("plain", autoload_env),
            "without npusim": ("plain", _common.subprocess_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0")),
        }
    else:
        mode_note = (
            "measuring `import torch; import npusim` vs plain `import torch` (autoload off in both): "
            + ("npusim's torch.backends entry point is NOT installed (npusim is not pip-installed), so autoload "
               "cannot run" if not installed else "--mode explicit")
        )
        env = _common.subprocess_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        variants = {"with npusim": ("explicit", env), "without npusim": ("plain", env)}

    with tempfile.TemporaryDirectory(prefix="npusim-bench-pycache-") as pycache:
        for _, env in variants.values():
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        samples = measure(variants, runs)

    print(mode_note)
    print(f"npusim from {_common.npusim_location()}")
    print(f"{runs} alternating fresh processes per variant, medians")
    rows = []
    for name in variants:
        rows.append([name, f"{_common.median(samples[name]['import']):.3f}", f"{_common.median(samples[name]['cpu']):.3f}",
                     f"{_common.median(samples[name]['wall']):.3f}", str(all(samples[name]["npu"]))])
    _common.print_table(["variant", "import s", "import CPU s", "process wall s", "torch.npu available"], rows)
    if not all(samples["with npusim"]["npu"]):
        print("warning: the npu device was not available in the 'with npusim' variant", file=sys.stderr)

    def paired(key):
        return _common.median([w - o for w, o in zip(samples["with npusim"][key], samples["without npusim"][key])])

    added = paired("import")
    print(f"added by npusim (median of the per-round differences): {added:.3f} s of import time, "
          f"{paired('cpu'):.3f} s of import CPU time, {paired('wall'):.3f} s of process wall time; "
          f"difference of the medians: {_common.median(samples['with npusim']['import']) - _common.median(samples['without npusim']['import']):.3f} s")
    print(_common.target_line("import time added", added, TARGET_SECONDS, unit="s"))


if __name__ == "__main__":
    main()

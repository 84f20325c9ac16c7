"""Start-up cost of the ``import torch_npu`` hook of a pip-installed npusim.

pip-installed npusim puts ``npusim-torch_npu.pth`` in site-packages; Python runs its one line
(``import _npusim_torch_npu_hook; ...install()``) at every interpreter start, so that
``import torch_npu`` works before ``import torch``. The hook must not slow Python's start or
``import torch``: it imports nothing heavy. This benchmark times, in fresh interpreters, the
process start plus ``import torch`` with the hook in a site-packages that Python reads (a
temporary user site, ``PYTHONUSERBASE``) and without it, alternating the two, and prints the
medians, their ratio and the median of the per-round differences; the target is checked on the
hook's import time from ``python -X importtime`` (the wall times are too noisy for milliseconds).

    TARGET start-up added by the hook: 1.2 ms (target <= 5.0 ms) MET

Usage: python bench/bench_torch_npu_hook.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET_MS = 5.0
PYTHON_SOURCE = Path(__file__).resolve().parents[1] / "python"


def timed(env: dict[str, str]) -> float:
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr[-2000:])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="3 runs")
    args = parser.parse_args()
    if args.quick:
        args.runs = min(args.runs, 3)
    with tempfile.TemporaryDirectory() as folder:
        with_hook = Path(folder) / "with"
        without_hook = Path(folder) / "without"
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        for base in (with_hook, without_hook):
            (base / "lib" / version / "site-packages").mkdir(parents=True)
        site = with_hook / "lib" / version / "site-packages"
        shutil.copy(PYTHON_SOURCE / "_npusim_torch_npu_hook.py", site)
        shutil.copy(PYTHON_SOURCE / "npusim-torch_npu.pth", site)
        envs = {
            "with hook": _common.subprocess_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONUSERBASE=str(with_hook)),
            "without hook": _common.subprocess_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONUSERBASE=str(without_hook)),
        }
        for env in envs.values():
            timed(env)  # page cache, __pycache__
        samples: dict[str, list[float]] = {name: [] for name in envs}
        for r in range(args.runs):
            for name in list(envs) if r % 2 == 0 else list(reversed(envs)):
                samples[name].append(timed(envs[name]))
        # The hook's own import, from Python's import profiler (precise where wall times are noisy).
        hook_us = []
        for _ in range(args.runs):
            profile = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], env=envs["with hook"],
                                     capture_output=True, text=True).stderr
            hook_us += [int(line.split("|")[1]) for line in profile.splitlines() if line.rstrip().endswith("_npusim_torch_npu_hook")]
    with_s, without_s = (_common.median(samples[name]) for name in envs)
    added = _common.median([w - o for w, o in zip(samples["with hook"], samples["without hook"])])
    print(f"{args.runs} alternating fresh processes per variant: python -c 'import torch' (autoload off)")
    _common.print_table(["variant", "median s"], [["with hook", f"{with_s:.3f}"], ["without hook", f"{without_s:.3f}"]])
    print(f"ratio with/without: {with_s / without_s:.3f}")
    print(f"import of the hook module at start-up (-X importtime, cumulative, median): {_common.median(hook_us) / 1000:.2f} ms")
    print(f"start-up + import torch added (median of per-round differences, noisy): {added * 1000:.1f} ms")
    # The target is on the profiler's figure: the wall-time difference is within the noise of a shared machine.
    print(_common.target_line("start-up added by the hook", _common.median(hook_us) / 1000, TARGET_MS, unit="ms"))


if __name__ == "__main__":
    main()

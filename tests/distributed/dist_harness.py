"""Launches a job of W ranks (subprocesses, bounded by a timeout) and gathers each rank's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from npusim_testing.fresh_process import free_port  # noqa: F401 - the harness's users import it here

HERE = Path(__file__).resolve().parent
PYTHON_SOURCE = HERE.parents[1] / "python"
WORKER = HERE / "dist_worker.py"


def environment(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    # The checkout's python/ when the extension is built there (as conftest), else the installed npusim.
    if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):
        env["PYTHONPATH"] = str(PYTHON_SOURCE) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["TORCH_NPU_WARNING_DISABLE"] = env.get("TORCH_NPU_WARNING_DISABLE", "0")
    env.update(extra or {})
    return env


def run_job(scenario: str, world: int, timeout: float = 60, env: dict | None = None, per_rank_env=None,
            master: str = "127.0.0.1"):
    """Run `scenario` of dist_worker.py on `world` ranks; return [(returncode, result-or-None, stderr)]."""
    port = free_port()
    processes = []
    for rank in range(world):
        rank_env = environment(env)
        rank_env.update(MASTER_ADDR=master, MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                        LOCAL_RANK=str(rank))
        if per_rank_env:
            rank_env.update(per_rank_env(rank))
        processes.append(subprocess.Popen([sys.executable, str(WORKER), scenario], env=rank_env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            out, err = process.communicate()
            results.append((None, None, "TIMEOUT\n" + err))
            continue
        result = None
        for line in out.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
        results.append((process.returncode, result, err))
    return results

"""Shared helpers of the migration tests: running programs plainly (the CPU run of a CUDA
program on a machine without CUDA) and under ``npusim run``, and reading their losses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
EXPECTED = HERE / "expected"
PYTHON_SOURCE = HERE.parents[1] / "python"
REPORTS = [
    "change_list.csv",
    "unsupported_api.csv",
    "unknown_api.csv",
    "api_precision_advice.csv",
    "api_performance_advice.csv",
    "cuda_op_list.csv",
]
LOSS = re.compile(r"^LOSS (\d+) (\S+)$", re.M)


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):
        env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_SOURCE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("TORCH_TRANSFER_TO_NPU", None)
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra or {})
    return env


def run(command: list[str], cwd, timeout: float = 120, extra_env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=str(cwd), env=environment(extra_env), capture_output=True, text=True, timeout=timeout
    )


def run_plain(script: Path, args: list[str], cwd) -> subprocess.CompletedProcess:
    return run([sys.executable, str(script), *args], cwd)


def run_on_npusim(script: Path, args: list[str], cwd, from_cuda: bool = False) -> subprocess.CompletedProcess:
    flags = ["--from-cuda"] if from_cuda else []
    return run([sys.executable, "-m", "npusim", "run", "--no-summary", *flags, str(script), *args], cwd)


def losses(output: str) -> list[tuple[int, str]]:
    return [(int(step), value) for step, value in LOSS.findall(output)]


def migrate_code(tmp_path: Path, code: str, name: str = "program.py", **options):
    """Migrate one file in a fresh folder; return (migrated code, change rows, result folder)."""
    from npusim.migration import migrate
    from npusim.migration.reports import read_csv

    source = tmp_path / "src"
    source.mkdir(parents=True, exist_ok=True)
    (source / name).write_text(code)
    result = migrate(str(source), str(tmp_path / "out"), **options)
    folder = Path(result.output)
    return (folder / name).read_text(), read_csv(str(folder / "change_list.csv"))[1:], folder

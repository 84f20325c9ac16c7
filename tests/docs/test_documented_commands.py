"""Every command that the README and the docs/ pages show is exercised, so that a refactor cannot
break one silently (an example that stopped importing once sat in the README for weeks).

:func:`documented_commands` reads the shell commands out of the pages (indented blocks, fenced
blocks, ``$ `` prompts). :data:`HOW_EACH_IS_EXERCISED` says, for each, how: run here (with quick
arguments when the documented run is long) or the test or CI step that already runs it. A command
added to a page without an entry here fails :func:`test_every_documented_command_is_exercised`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from npusim_testing.fresh_process import free_port, subprocess_env

REPOSITORY = Path(__file__).resolve().parents[2]
PAGES = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
# A line of a code block is a command when it starts with one of these programs.
COMMAND = re.compile(r"^((npusim|npu-smi|python3?|torchrun|torch_npu_run|bash|source|cmake|g\+\+|gcc|ls|diff|head|cat|"
                     r"cd|export)(\s|$)|\./\S)")


def documented_commands() -> list[tuple[str, int, str]]:
    """(page, line, command) of every shell command shown in the README and docs/."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        fenced, language, transcript = False, "", False
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                fenced, language = not fenced, line[3:].strip()
                if fenced:  # a block with `$ ` prompts is a transcript: only the prompted lines are commands
                    block = lines[number:]
                    block = block[:next((i for i, b in enumerate(block) if b.startswith("```")), len(block))]
                    transcript = any(b.startswith("$ ") for b in block)
                continue
            if fenced and language in ("", "sh", "bash", "shell", "console"):
                if transcript and not line.startswith("$ "):
                    continue
                text = line[2:] if line.startswith("$ ") else line
            elif not fenced and line.startswith("    ") and not line.startswith("     "):
                text = line.strip()
            else:
                continue
            text = text.split("  #")[0].strip()
            if COMMAND.match(text):
                found.append((page.relative_to(REPOSITORY).as_posix(), number, text))
    return found


# command -> ("run", quick command or None for the command itself, timeout s[, exit codes the page
# shows, default 0]) | ("elsewhere", where)
HOW_EACH_IS_EXERCISED: dict[str, tuple] = {
    "bash scripts/run-main.sh": ("elsewhere", ".ci/run runs it after the tests"),
    "bash scripts/run-tests.sh": ("elsewhere", ".ci/run is this command"),
    "cmake -S csrc/runtime -B build/runtime -G Ninja && cmake --build build/runtime && ctest --test-dir build/runtime":
        ("elsewhere", "scripts/run-tests.sh builds and runs the runtime's CTest suite the same way"),
    "npusim run examples/megatron_estimate.py": ("run", None, 300),
    "npusim run examples/megatron_estimate.py --model qwen2-7b-4k": ("run", None, 300),
    'source "$(npusim cann-home)/set_env.sh"': ("elsewhere", "tests/acl/test_acl_corpus.py builds a program with it"),
    'g++ main.cpp -I"$ASCEND_TOOLKIT_HOME/include" -L"$ASCEND_TOOLKIT_HOME/lib64" -lascendcl -lopapi -o main':
        ("elsewhere", "tests/acl/test_acl_corpus.py builds an aclnn program with these flags"),
    "./main": ("elsewhere", "tests/acl/test_acl_corpus.py runs the program it built"),
    "npusim migrate examples/cuda_project -o /tmp/migrated": ("run", None, 300),
    "ls /tmp/migrated/cuda_project_msft": ("run", None, 60),
    # The page shows the differences: diff exits 1.
    "diff -u examples/cuda_project/train.py /tmp/migrated/cuda_project_msft/train.py": ("run", None, 60, (1,)),
    "head -4 /tmp/migrated/cuda_project_msft/change_list.csv": ("run", None, 60),
    "cat /tmp/migrated/cuda_project_msft/api_performance_advice.csv": ("run", None, 60),
    "cd /tmp/migrated/cuda_project_msft && npusim run train.py": ("run", None, 300),
    "npusim smi info watch -i 0 -n 3": ("run", None, 60),
    "npusim smi info -t usages; echo $?": ("run", None, 60),
    "torchrun --nproc_per_node=2 examples/ddp_train.py": ("run", "torchrun --nproc_per_node=2 examples/ddp_train.py "
                                                           "--steps 2 --width 64 --batch 8", 300),
    "npusim compare [--steps N] [--tensors] [--output DIR] [--level mix|L1|L0] [--explain K] SCRIPT [ARGS...]":
        ("elsewhere", "the synopsis of the command; tests/compare runs it with each option"),
    "npusim compare --steps 2 --output /tmp/npusim_compare examples/gpt_transformer.py --amp fp16":
        ("run", "npusim compare --steps 1 --output /tmp/npusim_compare examples/gpt_transformer.py --amp fp16", 600),
    "python examples/llama_fsdp_estimate.py": ("run", "python examples/llama_fsdp_estimate.py --world-sizes 8 64 "
                                                      "--layers 2 --seq 256", 600),
}


def test_every_documented_command_is_exercised():
    shown = {command for _, _, command in documented_commands()}
    missing = sorted(shown - set(HOW_EACH_IS_EXERCISED))
    stale = sorted(set(HOW_EACH_IS_EXERCISED) - shown)
    assert not missing, f"documented commands no test exercises (add them to HOW_EACH_IS_EXERCISED): {missing}"
    assert not stale, f"entries for commands no page shows any more: {stale}"


def _runnable() -> list[tuple[str, str, int, tuple[int, ...]]]:
    return [(command, how[1] or command, how[2], how[3] if len(how) > 3 else (0,))
            for command, how in HOW_EACH_IS_EXERCISED.items() if how[0] == "run"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of the examples, with /tmp/migrated of the pages mapped into a fresh folder."""
    root = tmp_path_factory.mktemp("documented")
    shutil.copytree(REPOSITORY / "examples", root / "examples")
    return root


@pytest.mark.parametrize("documented, command, timeout, exit_codes", _runnable(), ids=[r[0] for r in _runnable()])
def test_documented_command_runs(documented, command, timeout, exit_codes, workspace):
    if "/tmp/migrated" in command and not (workspace / "migrated").exists() and "npusim migrate" not in command:
        _shell("npusim migrate examples/cuda_project -o /tmp/migrated", workspace, 300)
    done = _shell(command, workspace, timeout)
    assert done.returncode in exit_codes, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def _shell(command: str, workspace: Path, timeout: int) -> subprocess.CompletedProcess:
    """Runs a documented command as a user's shell would, from the repository's root (here a copy of
    its examples), with the npusim of this test run first on PATH and PYTHONPATH."""
    for documented_folder in ("/tmp/migrated", "/tmp/npusim_compare"):
        command = command.replace(documented_folder, str(workspace / documented_folder.rsplit("/", 1)[1]))
    bin_folder = workspace / "bin"
    if not bin_folder.exists():
        bin_folder.mkdir()
        launcher = "import sys; from npusim_tools.launcher import {}; sys.exit({}())"
        for name, function in (("npusim", "main"), ("npu-smi", "npu_smi_main")):
            script = bin_folder / name
            script.write_text(f"#!{sys.executable}\n" + launcher.format(function, function).replace("; ", "\n") + "\n")
            script.chmod(0o755)
        (bin_folder / "python").symlink_to(sys.executable)
        torchrun = bin_folder / "torchrun"
        torchrun.write_text(f"#!{sys.executable}\nimport sys\nfrom torch.distributed.run import main\nsys.exit(main())\n")
        torchrun.chmod(0o755)
    # torchrun's default port (29500) is taken from PET_MASTER_PORT: a free one, so that test files
    # running side by side do not meet on it.
    env = subprocess_env({"PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}", "PET_MASTER_PORT": str(free_port())})
    return subprocess.run(["bash", "-c", command], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=timeout)

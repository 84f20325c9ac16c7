"""The corpus: small GPU programs written for these tests. Each is migrated with
``npusim migrate``; its reports must equal the reviewed files under ``expected/``, and the
migrated program, run on npusim, must print exactly the losses of the original program run on
the CPU (this machine has no CUDA, so the original takes its CPU path). Distributed programs run
only where the hccl backend is available."""

from __future__ import annotations

import filecmp
import shutil
import sys
from pathlib import Path

import pytest

from migration_helpers import CORPUS, EXPECTED, REPORTS, losses, run, run_on_npusim, run_plain

PROGRAMS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
SINGLE_PROCESS = [p for p in PROGRAMS if p != "ddp_nccl"]
ARGUMENTS = {"checkpoint_map_location": ["{tmp}"]}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    from npusim.migration import migrate

    out = tmp_path_factory.mktemp("corpus_out")
    for program in PROGRAMS:
        migrate(str(CORPUS / program), str(out))
    return out


@pytest.mark.parametrize("program", PROGRAMS)
def test_reports_equal_expected(migrated, program):
    from npusim.migration.reports import read_csv

    folder = migrated / f"{program}_msft"
    assert (folder / "msFmkTranspltlog.txt").is_file()
    for report in REPORTS:
        assert read_csv(str(folder / report)) == read_csv(str(EXPECTED / program / report)), report


# One interpreter runs every program in turn (each as __main__ with its own argv and folder),
# so the corpus costs two interpreter starts instead of two per program.
DRIVER = """
import os, runpy, sys, traceback
for program, path, arguments, folder in PROGRAMS:
    print("=== " + program, flush=True)
    os.chdir(folder)
    sys.argv = [path] + arguments
    sys.path.insert(0, os.path.dirname(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException:
        print("!!! " + traceback.format_exc().replace("\\n", " | "), flush=True)
    finally:
        sys.path.pop(0)
        for name in [n for n, m in list(sys.modules.items())
                     if getattr(m, "__file__", None) and os.path.dirname(m.__file__) == os.path.dirname(path)]:
            del sys.modules[name]
"""


def _outputs(stdout: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("=== "):
            current = sections.setdefault(line[4:], [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def _run_all(root: Path, suffix: str, tmp: Path, on_npusim: bool) -> dict[str, str]:
    programs = []
    for program in SINGLE_PROCESS:
        folder = tmp / f"{program}{suffix or '_cpu'}"
        folder.mkdir()
        arguments = [a.replace("{tmp}", str(folder)) for a in ARGUMENTS.get(program, [])]
        programs.append((program, str(root / f"{program}{suffix}" / "train.py"), arguments, str(folder)))
    driver = tmp / f"driver{suffix or '_cpu'}.py"
    driver.write_text(f"PROGRAMS = {programs!r}\n" + DRIVER)
    result = run_on_npusim(driver, [], tmp) if on_npusim else run_plain(driver, [], tmp)
    assert result.returncode == 0, result.stderr
    return _outputs(result.stdout)


@pytest.fixture(scope="module")
def runs(migrated, tmp_path_factory) -> tuple[dict[str, str], dict[str, str]]:
    tmp = tmp_path_factory.mktemp("corpus_runs")
    return _run_all(CORPUS, "", tmp, on_npusim=False), _run_all(migrated, "_msft", tmp, on_npusim=True)


PROGRAMS_WITH_FP32_CONVOLUTIONS = {"event_timing"}


@pytest.mark.parametrize("program", SINGLE_PROCESS)
def test_migrated_program_on_npusim_gives_the_cpu_losses(runs, program):
    original, on_npu = runs
    assert "!!! " not in original[program], original[program]
    assert "!!! " not in on_npu[program], on_npu[program]
    expected = losses(original[program])
    assert expected, original[program]
    got = losses(on_npu[program])
    if program in PROGRAMS_WITH_FP32_CONVOLUTIONS:
        # torch_npu runs fp32 convolutions in HF32 by default (torch.npu.conv.allow_hf32 = True), and so
        # does npusim: the losses agree with the CPU run to HF32 precision, not bit for bit.
        assert [step for step, _ in got] == [step for step, _ in expected]
        for (_, value), (_, reference) in zip(got, expected):
            assert float(value) == pytest.approx(float(reference), rel=1e-3)
    else:
        assert got == expected


def test_npu_paths_were_taken(runs):
    """The migrated programs really ran their device branch (not their CPU fallback)."""
    original, on_npu = runs
    assert "ms on Ascend910B2" in on_npu["event_timing"]
    assert "Ascend910B2: peak" in on_npu["memory_and_streams"]
    assert "Ascend" not in original["event_timing"] + original["memory_and_streams"]


def test_distributed_program(migrated, tmp_path):
    source = (migrated / "ddp_nccl_msft" / "train.py").read_text()
    assert 'backend = "hccl" if torch.npu.is_available() else "gloo"' in source
    assert 'torch.device("npu", local_rank)' in source
    import torch.distributed as dist

    import npusim  # noqa: F401

    if not (dist.is_available() and dist.is_backend_available("hccl")):
        pytest.skip("the hccl backend is not built in this tree (csrc/distributed): the migrated DDP program is "
                    "checked as source and reports only")
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    original = run(launcher + [str(CORPUS / "ddp_nccl" / "train.py")], tmp_path, timeout=180)
    if original.returncode != 0 and "terminate called without an active exception" in original.stderr:
        # The reference is plain PyTorch on the CPU over Gloo. PyTorch 2.13's ProcessGroupGloo can
        # abort at exit: its work-loop thread drops the last reference to the all_reduce'd tensor
        # (a Python-owned one) after wait() returned, during interpreter finalization (seen here
        # in a core dump: ~AsyncAllreduceWork -> decref_pyobject -> take_gil -> pthread_exit).
        # npusim's hccl path hands such references back to the caller (DeferredRelease.h); the
        # upstream reference run gets a second try instead.
        original = run(launcher + [str(CORPUS / "ddp_nccl" / "train.py")], tmp_path, timeout=180)
    assert original.returncode == 0, original.stderr
    on_npu = run(
        launcher + ["-m", "npusim", "run", "--no-summary", str(migrated / "ddp_nccl_msft" / "train.py")],
        tmp_path,
        timeout=180,
    )
    assert on_npu.returncode == 0, on_npu.stderr
    assert losses(original.stdout) and losses(on_npu.stdout) == losses(original.stdout)


def _all_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("program", PROGRAMS)
def test_files_without_cuda_code_are_copied_unchanged(migrated, program):
    from npusim.migration.reports import read_csv

    folder = migrated / f"{program}_msft"
    changed = {row[0] for row in read_csv(str(folder / "change_list.csv"))[1:]}
    source_files = _all_files(CORPUS / program)
    assert set(source_files) <= set(_all_files(folder))
    for name in source_files:
        same = filecmp.cmp(CORPUS / program / name, folder / name, shallow=False)
        assert same == (name not in changed), name
    if program == "no_cuda":
        assert changed == set()


def test_migrating_migrated_code_changes_nothing(migrated, tmp_path):
    from npusim.migration import migrate

    for program in PROGRAMS:
        first = migrated / f"{program}_msft"
        copy = tmp_path / program
        shutil.copytree(first, copy, ignore=shutil.ignore_patterns("*.csv", "*.txt"))
        result = migrate(str(copy), str(tmp_path / "again"))
        assert result.changed_files == [], (program, result.changed_files)
        for name in _all_files(copy):
            assert filecmp.cmp(copy / name, Path(result.output) / name, shallow=False), name

"""Every configuration file and flag is validated when read: errors name the file, line and key,
and nothing blocks (FIFOs), exhausts memory (/dev/zero) or prints raw bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHIPS = Path(__file__).resolve().parents[2] / "python" / "npusim" / "data" / "chips"
INIT = "import torch, npusim\ntry:\n    torch.npu.init()\n    print('accepted')\nexcept Exception as e:\n    print('error:', e)\n"


def chip_text(**replace: str) -> str:
    lines = []
    for line in (CHIPS / "Ascend910B2.ini").read_text().splitlines():
        key = line.split("=")[0].strip()
        if key in replace:
            line = f"{key} = {replace[key]}"
        lines.append(line)
    return "\n".join(lines).replace("soc_name = Ascend910B2", "soc_name = TestChip") + "\n"


def run_with_chip_dir(python_runner, directory: Path):
    return python_runner(INIT, timeout=60, NPUSIM_CHIP_DIR=str(directory), NPUSIM_SOC="TestChip")


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("cube_frequency_mhz", "nan", "cube_frequency_mhz = nan is not a finite number"),
        ("cube_frequency_mhz", "inf", "cube_frequency_mhz = inf is not a finite number"),
        ("cube_fp16_macs_per_cycle", "0", "cube_fp16_macs_per_cycle = 0 is invalid: expected a number > 0"),
        ("device_capability", "abc", 'device_capability = "abc" is invalid: expected <major>.<minor>'),
        ("hbm_bandwidth_efficiency", "1.5", "expected a number in (0, 1]"),
    ],
)
def test_chip_file_values(python_runner, tmp_path, key, value, expected):
    (tmp_path / "test.ini").write_text(chip_text(**{key: value}))
    result = run_with_chip_dir(python_runner, tmp_path)
    assert "error:" in result.stdout, result.stdout + result.stderr
    assert expected in result.stdout
    assert f"{tmp_path}/test.ini line " in result.stdout  # file and line


def test_chip_file_nul_byte_is_escaped(python_runner, tmp_path):
    (tmp_path / "test.ini").write_bytes(chip_text(cube_frequency_mhz="18\x0000").encode())
    result = run_with_chip_dir(python_runner, tmp_path)
    assert 'cube_frequency_mhz = "18\\x0000" is not a valid number' in result.stdout, result.stdout
    assert "\x00" not in result.stdout


def test_chip_dir_fifo_does_not_hang(python_runner, tmp_path):
    os.mkfifo(tmp_path / "x.ini")
    result = run_with_chip_dir(python_runner, tmp_path)
    assert f"chip file {tmp_path}/x.ini cannot be read: it is a FIFO, not a regular file" in result.stdout


def test_chip_file_symlink_to_dev_zero(python_runner, tmp_path):
    (tmp_path / "x.ini").symlink_to("/dev/zero")
    result = run_with_chip_dir(python_runner, tmp_path)
    assert "cannot be read: it is a character device, not a regular file" in result.stdout, result.stdout


def test_chip_file_that_is_a_directory(python_runner, tmp_path):
    (tmp_path / "x.ini").mkdir()
    result = run_with_chip_dir(python_runner, tmp_path)
    assert f"chip file {tmp_path}/x.ini cannot be read: it is a directory" in result.stdout, result.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_unreadable_chip_file(python_runner, tmp_path):
    path = tmp_path / "x.ini"
    path.write_text(chip_text())
    path.chmod(0)
    result = run_with_chip_dir(python_runner, tmp_path)
    assert "cannot be read: Permission denied" in result.stdout, result.stdout


def test_chip_file_too_large(python_runner, tmp_path):
    (tmp_path / "x.ini").write_text("# padding\n" * 200_000)
    result = run_with_chip_dir(python_runner, tmp_path)
    assert "cannot be read: it is larger than 1048576 bytes" in result.stdout, result.stdout


@pytest.mark.parametrize("value", ["0.5", "100", "0.5K"])
def test_hbm_size_too_small(python_runner, value):
    result = python_runner(INIT, timeout=60, NPUSIM_HBM_SIZE=value)
    assert f"NPUSIM_HBM_SIZE={value} is invalid: the size must be at least 1M" in result.stdout, result.stdout


PLACEMENT = "import torch, npusim\ntry:\n    torch.ones(2, device='npu').add(1)\n    print('accepted')\nexcept Exception as e:\n    print('error:', e)\n"


@pytest.mark.parametrize(
    "operator, expected",
    [
        ("aten::no_such_operator", 'operator "aten::no_such_operator" does not exist in this PyTorch'),
        ("aten::add.NoSuchOverload", 'operator "aten::add.NoSuchOverload" does not exist in this PyTorch'),
        ("aten::", 'operator "aten::" is not of the form'),
    ],
)
def test_placement_override_operator(python_runner, tmp_path, operator, expected):
    overrides = tmp_path / "overrides.tsv"
    overrides.write_text(f"{operator}\tai_cpu\t-\tno\ttest\n")
    result = python_runner(PLACEMENT, timeout=60, NPUSIM_PLACEMENT_OVERRIDES=str(overrides))
    assert expected in result.stdout, result.stdout + result.stderr[-1000:]
    assert f"placement file {overrides} line 1" in result.stdout


def test_placement_override_existing_operators_accepted(python_runner, tmp_path):
    overrides = tmp_path / "overrides.tsv"
    overrides.write_text("aten::add.Tensor\tai_cpu\t-\tno\ttest\naten::mul.*\tai_core\t-\tno\ttest\n")
    result = python_runner(PLACEMENT, timeout=60, NPUSIM_PLACEMENT_OVERRIDES=str(overrides))
    assert "accepted" in result.stdout, result.stdout + result.stderr[-1000:]


def test_placement_override_fifo_and_directory(python_runner, tmp_path):
    fifo = tmp_path / "fifo.tsv"
    os.mkfifo(fifo)
    result = python_runner(PLACEMENT, timeout=60, NPUSIM_PLACEMENT_OVERRIDES=str(fifo))
    assert f"placement file {fifo} cannot be read: it is a FIFO" in result.stdout, result.stdout
    result = python_runner(PLACEMENT, timeout=60, NPUSIM_PLACEMENT_OVERRIDES=str(tmp_path))
    assert f"placement file {tmp_path} cannot be read: it is a directory" in result.stdout, result.stdout

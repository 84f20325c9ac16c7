"""The ``npusim`` command: ``npusim run`` and ``npusim devices``.

Most cases call :func:`npusim.cli.main` in this process (fast: torch is loaded already); two
run the real command in a subprocess.
"""

import subprocess
import sys
import textwrap

import pytest

from npusim_testing.fresh_process import subprocess_env

PROGRAM = """
import sys
import torch
import torch_npu

print("argv:", sys.argv[1:], __name__)
x = torch.randn(32, 32).npu()
for _ in range(3):
    x = torch.relu(x @ x)
torch.npu.synchronize()
print("done", x.device)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def npusim_command(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "npusim", *args],
        env=subprocess_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.fixture()
def program(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


def in_process(capsys, *args):
    from npusim.cli import main

    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def test_run_success_and_summary(program):
    # The real command, end to end.
    result = npusim_command("run", str(program))
    assert result.returncode == 0, result.stderr
    assert "argv: [] __main__" in result.stdout
    assert "done npu:0" in result.stdout
    summary = result.stderr
    assert f"[npusim] run summary: {program} (exit code 0)" in summary
    assert "used: npu:0" in summary
    assert "aten::mm 3" in summary
    assert "npu:0: memory peak" in summary and "simulated device time" in summary


def test_run_passes_arguments_and_exit_code(program, capsys):
    result = in_process(capsys, "run", str(program), "3", "--verbose")
    assert result.returncode == 3
    assert "argv: ['3', '--verbose'] __main__" in result.stdout
    assert "(exit code 3)" in result.stderr


def test_run_script_folder_on_path(tmp_path, capsys):
    (tmp_path / "npusim_cli_helper_module.py").write_text("VALUE = 42\n")
    (tmp_path / "main.py").write_text("import npusim_cli_helper_module\nprint(npusim_cli_helper_module.VALUE)\n")
    result = in_process(capsys, "run", "--no-summary", str(tmp_path / "main.py"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"


def test_run_exception_exits_1_with_traceback(tmp_path, capsys):
    script = tmp_path / "broken.py"
    script.write_text("def fail():\n    raise ValueError('boom')\nfail()\n")
    result = in_process(capsys, "run", str(script))
    assert result.returncode == 1
    assert "Traceback (most recent call last):" in result.stderr
    assert "ValueError: boom" in result.stderr
    assert "runpy" not in result.stderr  # the program's frames only
    assert "(exit code 1)" in result.stderr


def test_run_system_exit_message(tmp_path, capsys):
    script = tmp_path / "quit.py"
    script.write_text("import sys\nsys.exit('bad input')\n")
    result = in_process(capsys, "run", "--no-summary", str(script))
    assert result.returncode == 1
    assert "bad input" in result.stderr
    assert "[npusim]" not in result.stderr


def test_run_missing_script(tmp_path, capsys):
    result = in_process(capsys, "run", str(tmp_path / "missing.py"))
    assert result.returncode == 2
    assert "can't open file" in result.stderr


def test_run_module(tmp_path, capsys, monkeypatch):
    (tmp_path / "npusim_cli_tool.py").write_text("import sys, torch\nprint(sys.argv[1:], torch.ones(1).npu().device)\n")
    monkeypatch.chdir(tmp_path)
    result = in_process(capsys, "run", "--no-summary", "-m", "npusim_cli_tool", "a", "b")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['a', 'b'] npu:0"


def test_devices(capsys):
    result = in_process(capsys, "devices")
    assert result.returncode == 0, result.stderr
    assert "Chip: Ascend910B2" in result.stdout
    assert "Devices: 8" in result.stdout
    assert "npu:7  Ascend910B2" in result.stdout


def test_devices_with_two(tmp_path):
    result = npusim_command("devices", env={"NPUSIM_DEVICE_COUNT": "2"})
    assert result.returncode == 0, result.stderr
    assert "Devices: 2" in result.stdout


def test_main_function_returns_exit_code(program, capsys):
    from npusim.cli import main

    argv, path = list(sys.argv), list(sys.path)
    assert main(["run", "--no-summary", str(program), "5"]) == 5
    assert "argv: ['5'] __main__" in capsys.readouterr().out
    assert sys.argv == argv and sys.path == path  # restored after the program


def test_no_command_is_an_error(capsys):
    from npusim.cli import main

    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert "usage: npusim" in capsys.readouterr().err

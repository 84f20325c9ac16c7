"""npu-smi: the §18.1 layout checked column by column and parsed as third-party parsers do,
the live process table of a running npusim program, the subcommands, usage errors, and the
console script that never shadows a real driver's npu-smi."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tools_support import FIXTURES, tool_env

# The patterns of npu-smi parsers (exporters and schedulers that read `npu-smi info`).
DEVICE_ROW = re.compile(r"^\|\s+(\d+)\s+(\w+)\s+\|\s+(\w+)\s+\|\s+([\d.]+|NA)\s+(\d+)\s+(\d+)\s*/\s*(\d+)\s+\|$")
CHIP_ROW = re.compile(r"^\|\s+(\d+)\s+\|\s+([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s+\|\s+(\d+)\s+(\d+)\s*/\s*(\d+)\s+(\d+)\s*/\s*(\d+)\s+\|$")
PROCESS_ROW = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+\|\s+(\d+)\s+\|\s*(.*?)\s*\|\s+(\d+)\s+\|$")
NO_PROCESS = re.compile(r"^\|\s+No running processes found in NPU (\d+)\s+\|$")


def parse(text: str) -> dict:
    devices, chips, processes, idle = [], [], [], []
    for line in text.splitlines():
        if m := DEVICE_ROW.match(line):
            devices.append(m.groups())
        elif m := CHIP_ROW.match(line):
            chips.append(m.groups())
        elif m := PROCESS_ROW.match(line):
            processes.append(m.groups())
        elif m := NO_PROCESS.match(line):
            idle.append(int(m.group(1)))
    return {"devices": devices, "chips": chips, "processes": processes, "idle": idle}


def bars(line: str) -> list[int]:
    return [i for i, c in enumerate(line) if c in "|+"]


def smi(npu_smi: str, arguments: list[str], runtime_dir: Path, **extra: str) -> subprocess.CompletedProcess:
    env = tool_env({"NPUSIM_RUNTIME_DIR": str(runtime_dir), "NPUSIM_SMI_SAMPLE_MS": "0", **extra})
    return subprocess.run([npu_smi, *arguments], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    directory.mkdir(mode=0o700)
    return directory


def test_layout_matches_the_fixture_column_by_column(npu_smi, runtime_dir):
    done = smi(npu_smi, ["info"], runtime_dir, NPUSIM_DEVICE_COUNT="2", NPUSIM_SOC="Ascend910B1")
    assert done.returncode == 0, done.stderr
    produced = done.stdout.splitlines()
    reference = (FIXTURES / "npu-smi-info-910B1.txt").read_text().splitlines()
    # Same frame and headers, row for row, except the values.
    assert produced[0] == reference[0]
    assert re.fullmatch(r"\| npu-smi (\S+)\s+Version: \1\s+\|", produced[1])
    assert produced[2:6] == reference[2:6]  # rule and the two header rows: byte-identical
    for line in produced:
        assert len(line) == len(reference[0]), line
    device_bars = bars(reference[6])
    for ours, theirs in zip(produced[6:12], reference[6:12]):
        assert bars(ours) == bars(theirs)
    assert produced[-7:-5] == reference[-8:-6]  # the process table's rule and header
    assert all(bars(line) == device_bars for line in produced if DEVICE_ROW.match(line) or CHIP_ROW.match(line))
    parsed = parse(done.stdout)
    assert [d[1] for d in parsed["devices"]] == ["910B1", "910B1"]
    assert [c[6] for c in parsed["chips"]] == ["65536", "65536"]  # HBM total
    assert parsed["idle"] == [0, 1]


def test_reference_fixture_parses_with_the_same_patterns():
    parsed = parse((FIXTURES / "npu-smi-info-910B1.txt").read_text())
    assert len(parsed["devices"]) == 2 and len(parsed["chips"]) == 2
    assert [p[2] for p in parsed["processes"]] == ["30496", "30336"]


def test_running_npusim_program_appears_with_its_memory(npu_smi, runtime_dir, tmp_path):
    ready = tmp_path / "ready"
    program = textwrap.dedent(f"""
        import time, torch, npusim
        x = torch.ones(64, 1024, 1024, device="npu:1")   # 256 MiB on NPU 1
        y = (x @ x[0].T).sum()                            # some device work
        torch.npu.synchronize()
        open({str(ready)!r}, "w").close()
        time.sleep(60)
    """)
    env = tool_env({"NPUSIM_RUNTIME_DIR": str(runtime_dir), "NPUSIM_DEVICE_COUNT": "4"})
    child = subprocess.Popen([sys.executable, "-c", program], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while not ready.exists():
            assert child.poll() is None, child.stderr.read()
            assert time.time() < deadline, "the npusim program did not start"
            time.sleep(0.1)
        done = smi(npu_smi, ["info"], runtime_dir, NPUSIM_DEVICE_COUNT="4")
        assert done.returncode == 0, done.stderr
        parsed = parse(done.stdout)
        assert parsed["idle"][-2:] == [2, 3]  # the runtime may also hold a context on NPU 0, as torch_npu does
        on_npu1 = [p for p in parsed["processes"] if p[0] == "1"]
        assert [(chip, int(pid), name) for _, chip, pid, name, _ in on_npu1] == [("0", child.pid, Path(sys.executable).name[:15])]
        assert int(on_npu1[0][4]) >= 256
        hbm_used = [int(c[5]) for c in parsed["chips"]]
        assert hbm_used[1] >= hbm_used[3] + 256
        proc_mem = smi(npu_smi, ["info", "-t", "proc-mem", "-i", "1"], runtime_dir, NPUSIM_DEVICE_COUNT="4")
        assert f"Process id:{child.pid}" in proc_mem.stdout
    finally:
        child.kill()
        child.wait()
    # A killed process leaves its file; npu-smi skips it because the pid is gone.
    after = smi(npu_smi, ["info"], runtime_dir, NPUSIM_DEVICE_COUNT="4")
    assert parse(after.stdout)["idle"] == [0, 1, 2, 3]


def test_subcommands_and_usage_errors(npu_smi, runtime_dir):
    listing = smi(npu_smi, ["info", "-l"], runtime_dir, NPUSIM_DEVICE_COUNT="3")
    assert re.search(r"Total Count\s+: 3", listing.stdout)
    assert len(re.findall(r"NPU ID\s+: \d", listing.stdout)) == 3
    usages = smi(npu_smi, ["info", "-t", "usages", "-i", "2"], runtime_dir)
    assert re.search(r"HBM Capacity\(MB\)\s+: 65536", usages.stdout) and "Aicore Usage Rate(%)" in usages.stdout
    watch = smi(npu_smi, ["info", "watch", "-d", "1", "-n", "2"], runtime_dir, NPUSIM_DEVICE_COUNT="2")
    assert watch.returncode == 0
    assert watch.stdout.splitlines()[0].split() == ["NPU", "Chip", "Pwr(W)", "Temp(C)", "AI", "Core(%)", "AI", "Cpu(%)",
                                                    "Ctrl", "Cpu(%)", "Memory(%)", "Memory", "BW(%)"]
    assert len(watch.stdout.splitlines()) == 1 + 2 * 2
    for arguments in (["info", "-t", "usages"], ["info", "-t", "usages", "-i", "8"], ["info", "--bogus"], ["nope"]):
        bad = smi(npu_smi, arguments, runtime_dir)
        assert bad.returncode == 255, arguments
        assert "Command error, please input correct command." in bad.stderr or "is invalid" in bad.stderr
        assert bad.stdout == ""
    config = smi(npu_smi, ["info"], runtime_dir, NPUSIM_DEVICE_COUNT="100")
    assert config.returncode == 1 and "NPUSIM_DEVICE_COUNT" in config.stderr


def _driver_stand_in(folder: Path) -> Path:
    """An ELF program named npu-smi, as the driver installs it, that prints its arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "npu_smi.c"
    source.write_text('#include <stdio.h>\nint main(int c, char** v) { printf("REAL NPU-SMI");'
                      ' for (int i = 1; i < c; ++i) printf(" %s", v[i]); printf("\\n"); return 0; }\n')
    program = folder / "npu-smi"
    subprocess.run(["cc", "-o", str(program), str(source)], check=True, capture_output=True, timeout=60)
    return program


def test_console_script_defers_to_a_real_npu_smi(tmp_path):
    real = _driver_stand_in(tmp_path / "driver")
    launcher = [sys.executable, "-c", "import sys; from npusim_tools.launcher import npu_smi_main; sys.exit(npu_smi_main())"]
    env = tool_env({"PATH": f"{real.parent}{os.pathsep}{os.environ['PATH']}", "NPUSIM_SMI_SAMPLE_MS": "0",
                    "NPUSIM_RUNTIME_DIR": str(tmp_path / "run")})
    done = subprocess.run([*launcher, "info", "-l"], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "REAL NPU-SMI info -l"
    env["NPUSIM_SMI"] = "1"  # the simulated one on request
    done = subprocess.run([*launcher, "info", "-l"], env=env, capture_output=True, text=True, timeout=60)
    assert "Total Count" in done.stdout
    # `npusim smi` is always the simulated one.
    del env["NPUSIM_SMI"]
    done = subprocess.run([sys.executable, "-m", "npusim_tools.launcher", "smi", "info", "-l"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "Total Count" in done.stdout


def _launcher_shim(folder: Path) -> Path:
    """A launcher shim named npu-smi, as pyenv puts first on PATH: a shell script that names no
    npusim module and runs the environment's console script (which runs the launcher again)."""
    console_script = folder / "versions" / "bin" / "npu-smi"
    console_script.parent.mkdir(parents=True, exist_ok=True)
    console_script.write_text(f"#!{sys.executable}\nimport sys\nfrom npusim_tools.launcher import npu_smi_main\n"
                              "sys.exit(npu_smi_main())\n")
    console_script.chmod(0o755)
    shim = folder / "shims" / "npu-smi"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f'#!/usr/bin/env bash\nset -e\nprogram="${{0##*/}}"\nexec "{console_script.parent}/$program" "$@"\n')
    shim.chmod(0o755)
    return shim


def test_console_script_under_a_launcher_shim_runs_the_simulated_npu_smi(tmp_path):
    shim = _launcher_shim(tmp_path / "pyenv")
    env = tool_env({"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "NPUSIM_SMI_SAMPLE_MS": "0",
                    "NPUSIM_RUNTIME_DIR": str(tmp_path / "run")})
    # Before the fix this exec'd the shim, which ran the console script again: forever.
    done = subprocess.run([str(shim), "info", "-l"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Total Count" in done.stdout
    # A shim in front of a real driver's program still reaches the driver's program.
    real = _driver_stand_in(tmp_path / "driver")
    env["PATH"] = f"{shim.parent}{os.pathsep}{real.parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run([str(shim), "info"], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "REAL NPU-SMI info"


def test_a_program_that_leads_back_to_the_console_script_cannot_loop(tmp_path):
    # An ELF "driver" program that runs the console script again (a wrapper compiled by a site):
    # the marker set across the first exec makes the second console script run the simulated one.
    folder = tmp_path / "wrapper"
    folder.mkdir()
    source = folder / "wrapper.c"
    source.write_text(textwrap.dedent(f"""\
        #include <unistd.h>
        int main(int c, char** v) {{
          char* args[] = {{"{sys.executable}", "-c",
            "import sys; from npusim_tools.launcher import npu_smi_main; sys.exit(npu_smi_main())", "info", "-l", 0}};
          execv(args[0], args);
          return 127;
        }}
        """))
    subprocess.run(["cc", "-o", str(folder / "npu-smi"), str(source)], check=True, capture_output=True, timeout=60)
    env = tool_env({"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "NPUSIM_SMI_SAMPLE_MS": "0",
                    "NPUSIM_RUNTIME_DIR": str(tmp_path / "run")})
    launcher = [sys.executable, "-c", "import sys; from npusim_tools.launcher import npu_smi_main; sys.exit(npu_smi_main())"]
    done = subprocess.run([*launcher, "info", "-l"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Total Count" in done.stdout

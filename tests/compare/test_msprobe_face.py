"""msprobe's own API served by npusim: a script instrumented for msprobe (``from msprobe.pytorch
import PrecisionDebugger``, a config.json) dumps on the simulated NPU unchanged; a real msprobe,
when installed, wins; msprobe's checks raise its exception."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from npusim_testing.fresh_process import subprocess_env

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
import torch
import torch_npu
from msprobe.pytorch import PrecisionDebugger, seed_all

seed_all(seed=1234, mode=False)
debugger = PrecisionDebugger(config_path="config.json")
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).npu()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    debugger.start(model)
    x = torch.randn(4, 8).npu()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    debugger.stop()
    debugger.step()
print("done", loss.item())
"""

CONFIG = {
    "task": "statistics", "dump_path": "./dump", "rank": [], "step": [0, 2], "level": "mix",
    "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"},
}


def _env(**extra):
    return subprocess_env(extra)


def _run(arguments, cwd, env=None, check=True):
    run = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=300,
                         env=env or _env(), cwd=cwd)
    if check:
        assert run.returncode == 0, run.stderr[-3000:]
    return run


def test_instrumented_script_dumps_unchanged(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    run = _run(["train.py"], tmp_path)
    assert "done" in run.stdout
    assert sorted(os.listdir(tmp_path / "dump")) == ["step0", "step2"]  # "step": [0, 2]
    (rank,) = glob.glob(str(tmp_path / "dump" / "step2" / "proc*"))
    dump = json.loads(Path(rank, "dump.json").read_text())
    assert (dump["task"], dump["level"]) == ("statistics", "mix")
    names = list(dump["data"])
    assert names[:4] == ["Functional.linear.0.forward", "Module.0.Linear.forward.0", "Functional.gelu.0.forward",
                         "Module.1.GELU.forward.0"]
    assert "Module.2.Linear.parameters_grad.0" in names and "Functional.linear.1.backward" in names
    # The same program under npusim compare: the debugger leaves the dumping to the compare run.
    run = _run(["-m", "npusim", "compare", "--steps", "2", "--output", "cmp", "train.py"], tmp_path)
    assert "every dumped value matches the CPU benchmark bit for bit" in run.stderr


def test_import_before_torch_and_real_msprobe_wins(tmp_path):
    # At interpreter start (the .pth line of a pip install): msprobe found before torch is imported.
    code = ("import _npusim_torch_npu_hook; _npusim_torch_npu_hook.install(); import sys\n"
            "import msprobe; print('torch' in sys.modules)\n"
            "from msprobe.pytorch import PrecisionDebugger; print(msprobe.__version__, PrecisionDebugger.__module__)")
    run = _run(["-c", code], tmp_path)
    assert run.stdout.split("\n")[:2] == ["False", "26.0.0+npusim msprobe.pytorch.precision_debugger"]
    real = tmp_path / "site" / "msprobe"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    env = _env()
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(tmp_path / "site")
    run = _run(["-c", "import torch, npusim, msprobe; print(getattr(msprobe, 'REAL', False))"], tmp_path, env=env)
    assert run.stdout.strip() == "True"


def test_msprobe_checks(tmp_path):
    code = """
import json, torch, npusim
from msprobe.pytorch import PrecisionDebugger, MsprobeException
json.dump({"task": "statistics", "level": "mix", "dump_path": "d"}, open("c.json", "w"))
debugger = PrecisionDebugger(config_path="c.json")
assert PrecisionDebugger() is debugger
try:
    debugger.start()
except MsprobeException as error:
    print("ERROR", error)
"""
    run = _run(["-c", code], tmp_path)
    assert "ERROR [msprobe] 无效参数：missing the parameter 'model'" in run.stdout
    code = """
import json, torch, npusim
from msprobe.pytorch import PrecisionDebugger, MsprobeException
json.dump({"task": "statistics", "level": "L2"}, open("c.json", "w"))
try:
    PrecisionDebugger(config_path="c.json")
except MsprobeException as error:
    print("ERROR", error)
"""
    run = _run(["-c", code], tmp_path)
    assert "level 'L2' is not supported by npusim's msprobe" in run.stdout

"""npusim's own chain: Python, torch (built against vs imported), the simulated CANN and
driver against the compatibility table, environment variables, visible devices."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from npusim_tools import npusim_data_dir, simulated_stack
from npusim_tools.compatibility import base_version, load_table, python_in_range, releases_for_torch_npu
from npusim_tools.doctor.environment import check_environment, parse_visible_devices
from npusim_tools.doctor.known_messages import match_messages
from npusim_tools.doctor.report import FAIL, INFO, PASS, WARN, Check

__all__ = ["run_probe", "check_chain", "built_against_torch"]

SECTION = "npusim chain"
PROBE = Path(__file__).with_name("probe.py")


def run_probe(python: str, env: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """Imports torch and npusim in a subprocess; returns what it found (or why it could not)."""
    try:
        done = subprocess.run([python, str(PROBE)], capture_output=True, env=dict(env), timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"probe_error": f"importing torch and npusim did not finish within {timeout:.0f} s"}
    except OSError as error:
        return {"probe_error": f"cannot run {python}: {error}"}
    stdout = done.stdout.decode("utf-8", "replace").strip().splitlines()
    for line in reversed(stdout):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    stderr = done.stderr.decode("utf-8", "replace").strip()
    return {"probe_error": f"the import probe exited with status {done.returncode}: {stderr[-2000:] or 'no output'}"}


def built_against_torch() -> tuple[str | None, str]:
    """The torch version npusim was built against: its distribution's ``torch==`` requirement,
    or in a checkout the pin of ``pyproject.toml``. Returns (version, where it was read)."""
    spec = importlib.util.find_spec("npusim")
    if spec is not None and spec.submodule_search_locations:
        package = Path(list(spec.submodule_search_locations)[0])
        pyproject = package.parents[1] / "pyproject.toml"
        if pyproject.is_file() and (package.parents[1] / "csrc").is_dir():
            match = re.search(r'"torch==([^"]+)"', pyproject.read_text(encoding="utf-8", errors="replace"))
            if match:
                return match.group(1), str(pyproject)
    try:
        for requirement in importlib.metadata.distribution("npusim").requires or []:
            match = re.match(r"torch\s*==\s*([\w.+]+)", requirement)
            if match:
                return match.group(1), "npusim's distribution metadata"
    except importlib.metadata.PackageNotFoundError:
        pass
    return None, "unknown"


def check_chain(probe: dict[str, Any], env: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    table = load_table()
    stack = simulated_stack()
    python_version = probe.get("python") or ".".join(map(str, sys.version_info[:3]))

    if "probe_error" in probe:
        checks.append(Check(SECTION, "import", FAIL, probe["probe_error"], "run `python -c 'import torch, npusim'` to see the full error"))
        return checks
    if "torch_error" in probe:
        message = probe["torch_error"]
        known = match_messages(message)
        checks.append(Check(SECTION, "torch", FAIL, f"import torch failed: {message}",
                            known[0].fix if known else "pip install torch==<the version npusim was built against>"))
        return checks

    torch_info = probe["torch"]
    torch_version = torch_info["version"]
    built, source = built_against_torch()
    if built is None:
        checks.append(Check(SECTION, "torch build", WARN, f"torch {torch_version} imported; the torch npusim was built against is unknown",
                            "reinstall npusim with pip so that its metadata records the torch it needs"))
    elif base_version(built) != base_version(torch_version):
        checks.append(Check(SECTION, "torch build", FAIL,
                            f"npusim was built against torch {built} ({source}), torch {torch_version} is imported: "
                            "its C++ extension will fail with undefined symbols",
                            f"pip install torch=={built}, or rebuild npusim against torch {torch_version}"))
    else:
        checks.append(Check(SECTION, "torch build", PASS, f"torch {torch_version} imported; npusim was built against torch {built}"))

    accelerator = torch_info.get("cuda") or torch_info.get("hip")
    if accelerator or re.search(r"\+(cu|rocm)\d", torch_version):
        checks.append(Check(SECTION, "torch accelerator", FAIL,
                            f"torch {torch_version} is a {'CUDA' if torch_info.get('cuda') else 'GPU'} build: "
                            "npusim, like torch_npu, refuses to load ('Two accelerators cannot be used at the same time')",
                            "pip install the CPU build: pip install torch==%s --index-url https://download.pytorch.org/whl/cpu"
                            % base_version(torch_version)))

    torch_npu_version = probe.get("torch_npu_version") or (base_version(torch_version) + "+npusim")
    rows = releases_for_torch_npu(torch_npu_version, table)
    if not rows:
        checks.append(Check(SECTION, "compatibility", WARN,
                            f"torch_npu {torch_npu_version} (PyTorch line {base_version(torch_version)}) is not in the compatibility table",
                            "use a PyTorch version that torch_npu supports (see python/npusim/data/compatibility.tsv)"))
    else:
        row = rows[0]
        in_range = python_in_range(python_version, row)
        if in_range is False:
            checks.append(Check(SECTION, "python", FAIL,
                                f"Python {python_version} is outside {row.python_min}-{row.python_max}, the range of torch_npu {row.torch_npu}",
                                f"use a Python from {row.python_min} to {row.python_max}"))
        else:
            checks.append(Check(SECTION, "python", PASS, f"Python {python_version} (torch_npu {row.torch_npu} supports {row.python_min}-{row.python_max})"))
        cann = stack.get("cann_version", "?")
        note = " (a pre-release line: its CANN pairing is npusim's assumption)" if row.status == "prerelease" else ""
        if cann == row.cann:
            checks.append(Check(SECTION, "simulated CANN", PASS,
                                f"torch_npu {torch_npu_version} with simulated CANN {cann} and driver {stack.get('driver_version', '?')}: "
                                f"matches the table (torch_npu {row.torch_npu} needs CANN {row.cann}){note}"))
        else:
            checks.append(Check(SECTION, "simulated CANN", FAIL,
                                f"the simulated CANN {cann} does not match torch_npu {row.torch_npu}, which needs CANN {row.cann}",
                                "fix python/npusim/data/simulated_stack.ini (cann_version) to the table's CANN"))

    if "npusim_error" in probe:
        message = probe["npusim_error"]
        known = match_messages(message)
        fix = known[0].fix if known else "run `python -c 'import torch_npu'` to see the full error"
        if "cannot run next to a real torch_npu" in message:
            fix = "uninstall torch-npu to use npusim, or uninstall npusim to use the real one"
        checks.append(Check(SECTION, "npusim import", FAIL, message.splitlines()[0][:400], fix,
                            details=[f"cause: {k.cause}" for k in known]))
    else:
        checks.append(Check(SECTION, "npusim import", PASS, f"import torch_npu served by npusim ({probe.get('npusim_file')})"))

    checks.extend(check_environment(env, npusim_data_dir()))

    if "device_count" in probe:
        count = probe["device_count"]
        physical_text = env.get("NPUSIM_DEVICE_COUNT") or "8"
        physical = int(physical_text) if physical_text.isdigit() else 8
        expected = len(parse_visible_devices(env.get("ASCEND_RT_VISIBLE_DEVICES"), physical))
        names = sorted(set(probe.get("device_names") or []))
        if count == 0:
            checks.append(Check(SECTION, "visible devices", FAIL,
                                f"no device is visible (ASCEND_RT_VISIBLE_DEVICES={env.get('ASCEND_RT_VISIBLE_DEVICES')!r}, "
                                f"{physical} simulated devices)",
                                "use a strictly ascending list of ids below the device count, e.g. ASCEND_RT_VISIBLE_DEVICES=0,1"))
        elif count != expected:
            checks.append(Check(SECTION, "visible devices", WARN, f"{count} devices visible, {expected} expected from the environment"))
        else:
            visible = env.get("ASCEND_RT_VISIBLE_DEVICES")
            suffix = f" (ASCEND_RT_VISIBLE_DEVICES={visible})" if visible is not None else ""
            checks.append(Check(SECTION, "visible devices", PASS, f"{count} x {', '.join(names)}{suffix}"))
            if visible is not None and len(parse_visible_devices(visible, 10**6)) != count:
                checks.append(Check(SECTION, "visible devices list", WARN,
                                    f"ASCEND_RT_VISIBLE_DEVICES={visible} names devices this server does not have: the list was cut at the first one",
                                    f"use ids from 0 to {physical - 1}"))
    elif "npusim_error" not in probe:
        checks.append(Check(SECTION, "visible devices", INFO, "not probed"))
    return checks

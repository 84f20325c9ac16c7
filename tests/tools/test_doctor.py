"""npusim doctor on fixture installs: healthy, deliberately broken (stale toolkit shadowing the
sourced one, mixed set_env variables, damaged driver version file, torch-npu for another torch
and CANN), not sourced, hostile files (symbolic-link loops, FIFOs, huge and non-UTF-8 plogs),
plog triage, message explanations, and npusim's own chain through the import probe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ascend_fixtures import LibraryCache, fake_distribution, make_install, make_plogs, sourced_env
from tools_support import run_tool, tool_env


@pytest.fixture(scope="session")
def libraries(tmp_path_factory) -> LibraryCache:
    return LibraryCache(tmp_path_factory.mktemp("compiled"))


def isolated(tmp_path: Path, extra: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Arguments and environment that keep the machine out: no ld.so cache, empty default
    library directories, HOME in the temporary tree."""
    empty = tmp_path / "empty-lib"
    empty.mkdir(exist_ok=True)
    arguments = ["--no-probe", "--ld-cache", str(tmp_path / "no-ld.so.cache"), "--default-lib-dirs", str(empty)]
    env = tool_env({"HOME": str(tmp_path / "home"), **extra})
    return arguments, env


def by_name(report: dict) -> dict[str, dict]:
    return {check["name"]: check for check in report["checks"]}


def test_healthy_install_passes(tmp_path, libraries, doctor_json):
    root = make_install(tmp_path, libraries)
    arguments, env = isolated(tmp_path, sourced_env(root))
    code, report = doctor_json([*arguments, "--ascend-root", str(root), "--no-plog"], env)
    checks = by_name(report)
    assert checks["driver"]["status"] == "pass" and "24.1.rc3" in checks["driver"]["summary"]
    assert checks["CANN toolkit"]["status"] == "pass" and "CANN 8.0.RC2" in checks["CANN toolkit"]["summary"]
    assert checks["set_env.sh"]["status"] == "pass", checks["set_env.sh"]
    for name in ("libascendcl.so", "libhccl.so", "libruntime.so", "libascend_hal.so"):
        assert checks[name]["status"] == "pass", checks[name]
    assert checks["libge_runner.so"]["status"] == "warn"  # optional libraries the fixture lacks
    assert code == 0 and report["ok"]


def test_broken_install_fails_with_fixes(tmp_path, libraries, doctor_json):
    root = make_install(tmp_path, libraries, versions=("8.0.RC1", "8.0.RC2"), latest="8.0.RC2",
                        driver_version_text=b"Version=\xff\xfe\ngarbage\n")
    env_vars = sourced_env(root)
    old = root / "ascend-toolkit" / "8.0.RC1"
    env_vars["LD_LIBRARY_PATH"] = f"{old}/lib64:{env_vars['LD_LIBRARY_PATH']}"  # a stale toolkit first
    env_vars["ASCEND_OPP_PATH"] = f"{old}/opp"                                   # left over from its set_env.sh
    site = tmp_path / "site"
    fake_distribution(site, "torch-npu", "2.1.0.post10")
    env_vars["PYTHONPATH"] = f"{site}:{env_vars['PYTHONPATH']}"
    arguments, env = isolated(tmp_path, env_vars)
    code, report = doctor_json([*arguments, "--ascend-root", str(root), "--no-plog"], env)
    checks = by_name(report)
    assert code == 1 and not report["ok"]
    assert checks["driver"]["status"] == "fail"
    assert "no valid Version= line" in checks["driver"]["summary"]
    shadow = checks["libascendcl.so"]
    assert shadow["status"] == "fail"
    assert f"loads {old}/lib64/libascendcl.so" in shadow["summary"] and "LD_LIBRARY_PATH entry 1" in shadow["summary"]
    assert "another toolkit shadows the sourced one" in shadow["summary"]
    assert f"remove {old}/lib64 from LD_LIBRARY_PATH" in shadow["fix"]
    assert any(d.startswith("shadowed") and "8.0.RC2/lib64/libascendcl.so" in d for d in shadow["details"])
    assert checks["set_env.sh"]["status"] == "fail"
    assert any("ASCEND_OPP_PATH" in d and "another toolkit" in d for d in checks["set_env.sh"]["details"])
    assert checks["torch-npu"]["status"] == "fail"
    assert "built for PyTorch 2.1.0" in checks["torch-npu"]["summary"]
    assert checks["CANN vs torch-npu"]["status"] == "fail"
    assert "goes with CANN 8.0.0, CANN 8.0.RC2 is installed" in checks["CANN vs torch-npu"]["summary"]
    text = run_tool(["doctor", *arguments, "--ascend-root", str(root), "--no-plog"], env)
    assert text.returncode == 1
    assert "[FAIL] libascendcl.so:" in text.stdout and "       fix: remove" in text.stdout


def test_not_sourced_reports_the_real_message(tmp_path, libraries, doctor_json):
    root = make_install(tmp_path, libraries)
    arguments, env = isolated(tmp_path, {})
    code, report = doctor_json([*arguments, "--ascend-root", str(root), "--no-plog"], env)
    checks = by_name(report)
    assert code == 1
    assert checks["set_env.sh"]["status"] == "fail" and "not sourced" in checks["set_env.sh"]["summary"]
    hccl = checks["libhccl.so"]
    assert hccl["status"] == "fail"
    assert "libhccl.so: cannot open shared object file: No such file or directory" in hccl["summary"]
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in hccl["fix"]


def test_cuda_torch_next_to_torch_npu(tmp_path, libraries, doctor_json):
    root = make_install(tmp_path, libraries, versions=("8.2.RC1",), latest="8.2.RC1")
    site = tmp_path / "site"
    fake_distribution(site, "torch-npu", "2.5.1.post1")
    fake_distribution(site, "torch", "2.5.1+cu121")
    env_vars = sourced_env(root)
    env_vars["PYTHONPATH"] = f"{site}:{env_vars['PYTHONPATH']}"
    arguments, env = isolated(tmp_path, env_vars)
    code, report = doctor_json([*arguments, "--ascend-root", str(root), "--no-plog"], env)
    checks = by_name(report)
    assert checks["torch-npu"]["status"] == "pass"
    assert checks["CANN vs torch-npu"]["status"] == "pass"
    assert checks["CUDA torch"]["status"] == "fail" and "Two accelerators" in checks["CUDA torch"]["summary"]
    assert "download.pytorch.org/whl/cpu" in checks["CUDA torch"]["fix"]


def test_hostile_files_are_reported_without_hanging(tmp_path, libraries, doctor_json):
    root = make_install(tmp_path, libraries, driver_version_text=None)
    os.mkfifo(root / "driver" / "version.info")          # would block a naive reader
    latest = root / "ascend-toolkit" / "latest"
    latest.unlink()
    (root / "ascend-toolkit" / "loop").symlink_to("latest")
    latest.symlink_to("loop")                             # latest -> loop -> latest
    arguments, env = isolated(tmp_path, sourced_env(root))
    code, report = doctor_json([*arguments, "--ascend-root", str(root), "--no-plog"], env)
    checks = by_name(report)
    assert code == 1
    assert checks["driver"]["status"] == "fail" and "not a regular file" in checks["driver"]["summary"]
    assert checks["CANN toolkit"]["status"] == "fail" and "symbolic link loop" in checks["CANN toolkit"]["summary"]


def test_plog_triage_groups_explains_and_survives_bad_logs(tmp_path, doctor_json):
    logs = make_plogs(tmp_path / "log")
    plog = logs / "debug" / "plog"
    huge = plog / "plog-300_20251225000000000.log"
    line = b"[WARNING] GE(300,python3):2025-12-25-00:00:00.000.000 [g.cc:1]300 noise\n"
    huge.write_bytes(line * (24 * 1024 * 1024 // len(line)))  # 24 MiB of warnings
    outside = tmp_path / "outside.log"
    outside.write_text("[ERROR] HCCL(1,x):2025-01-01-00:00:00.000.000 [h.cc:1]1 EI0006 socket\n")
    (plog / "plog-9_1.log").symlink_to(outside)
    arguments, env = isolated(tmp_path, {})
    code, report = doctor_json([*arguments, "--plog-root", str(logs)], env)
    checks = by_name(report)
    files = checks["plog files"]
    assert "3 plog files" in files["summary"] and "4 ERROR" in files["summary"]
    assert any("symbolic link: not followed" in d for d in files["details"])
    assert any("not UTF-8" in d for d in files["details"])
    groups = "\n".join(checks["errors by module and code"]["details"])
    assert "RUNTIME 507899: 2 x" in groups
    assert "An internal error occurs in the Driver module." in groups
    assert "ASCENDCL EZ9999: 1 x" in groups and "kernels package" in groups
    assert "EI0006" not in groups  # the linked file outside the tree was not read
    first = checks["first failing call"]
    assert "process 200" in first["summary"]
    assert "install the CANN kernels package" in first["fix"]
    assert any("earlier: process 144" in d and "err=507899" in d for d in first["details"])
    assert code == 0  # old logs warn, they do not fail the doctor


def test_explain_maps_known_messages_to_cause_and_fix():
    env = tool_env({})
    done = run_tool(["doctor", "--explain", "ImportError: libhccl.so: cannot open shared object file: No such file or "
                     "directory. Please check that the cann package is installed. ERR00008 PTA resource not found"], env)
    assert done.returncode == 0
    assert "cann-not-sourced: cause: the CANN toolkit is not installed" in done.stdout
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in done.stdout
    assert "torch_npu ERR00008: PTA resource not found" in done.stdout
    done = run_tool(["doctor", "--explain", "NPU function error: aclrtGetDeviceCount(&device_count), error code is 207004"], env)
    assert "no-device" in done.stdout and "ACL error 207004 \"The device is unavailable.\"" in done.stdout
    assert run_tool(["doctor", "--explain", "all is well"], env).returncode == 1


def test_npusim_chain_through_the_import_probe(tmp_path, doctor_json):
    arguments = ["--no-plog", "--ld-cache", str(tmp_path / "none"), "--default-lib-dirs", str(tmp_path)]
    code, report = doctor_json(arguments, tool_env({"HOME": str(tmp_path), "NPUSIM_DEVICE_COUNT": "4"}))
    checks = by_name(report)
    for name in ("torch build", "python", "simulated CANN", "npusim import", "environment variables", "visible devices"):
        assert checks[name]["status"] == "pass", checks[name]
    assert checks["visible devices"]["summary"].startswith("4 x Ascend910B2")
    assert code == 0
    code, report = doctor_json(arguments, tool_env({"HOME": str(tmp_path), "TASK_QUEUE_ENABLE": "5",
                                                    "ASCEND_RT_VISIBLE_DEVICES": "3,1", "NPUSIM_SOC": "Ascend999"}))
    checks = by_name(report)
    assert code == 1
    assert checks["variable TASK_QUEUE_ENABLE"]["summary"] == "TASK_QUEUE_ENABLE='5': TASK_QUEUE_ENABLE should be 0, 1 or 2"
    assert "unknown chip" in checks["variable NPUSIM_SOC"]["summary"]
    assert checks["npusim import"]["status"] in ("pass", "fail")

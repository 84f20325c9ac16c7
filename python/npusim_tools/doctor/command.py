"""The ``npusim doctor`` command line."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import sys
from typing import Sequence

from npusim_tools import python_executable
from npusim_tools.doctor.chain import check_chain, run_probe
from npusim_tools.doctor.install import check_install, discover
from npusim_tools.doctor.known_messages import explain_code, match_messages
from npusim_tools.doctor.libraries import check_libraries
from npusim_tools.doctor.plog import check_plogs, plog_roots
from npusim_tools.doctor.report import INFO, Check, Report

__all__ = ["build_parser", "run_doctor", "explain", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npusim doctor",
        description="Check the chain torch_npu code needs (npusim's, and a real Ascend install's, read-only): "
        "versions, environment, shared libraries, plog errors. Exit status 1 when a check fails.",
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument("--verbose", "-v", action="store_true", help="show every detail, also of passing checks")
    parser.add_argument("--ascend-root", metavar="DIR", help="the Ascend install root (default /usr/local/Ascend)")
    parser.add_argument("--plog-root", metavar="DIR", action="append",
                        help="scan this log root instead of the default ones (repeatable)")
    parser.add_argument("--no-plog", action="store_true", help="skip the plog triage")
    parser.add_argument("--no-probe", action="store_true", help="do not import torch and npusim (skips npusim's chain)")
    parser.add_argument("--python", metavar="PYTHON", default=None, help="the interpreter whose chain to check (default: this one)")
    parser.add_argument("--explain", metavar="TEXT", help="explain an error message or code (e.g. a line of a traceback) and exit")
    parser.add_argument("--ld-cache", metavar="FILE", help=argparse.SUPPRESS)        # resolve as with another ld.so.cache
    parser.add_argument("--default-lib-dirs", metavar="DIRS", help=argparse.SUPPRESS)  # and other default directories
    parser.add_argument("--probe-timeout", type=float, default=180.0, help=argparse.SUPPRESS)
    return parser


def explain(text: str) -> list[str]:
    lines = []
    for message in match_messages(text):
        lines.append(f"{message.key}: cause: {message.cause}")
        lines.append(f"    fix: {message.fix}")
    seen = set()
    for code in re.findall(r"\b(E[A-Z]\d{4}|ERR\d{5}|\d{6})\b", text):
        if code in seen:
            continue
        seen.add(code)
        explanation = explain_code(code)
        if explanation:
            lines.append(explanation)
    return lines


def _torch_npu_library() -> str | None:
    try:
        dist = importlib.metadata.distribution("torch-npu")
    except importlib.metadata.PackageNotFoundError:
        return None
    if "npusim" in (dist.version or ""):
        return None
    path = dist.locate_file("torch_npu/lib/libtorch_npu.so")
    return str(path) if os.path.exists(str(path)) else None


def run_doctor(args: argparse.Namespace, env: dict[str, str] | None = None) -> Report:
    env = dict(os.environ if env is None else env)
    report = Report()
    python_version = None
    if not args.no_probe:
        probe = run_probe(args.python or python_executable(), env, args.probe_timeout)
        python_version = probe.get("python")
        report.extend(check_chain(probe, env))
    install = discover(args.ascend_root, env)
    toolkit = None
    driver_root = None
    if install is None:
        report.add(Check("Ascend installation (read-only)", "installation", INFO,
                         "no Ascend driver, toolkit or torch-npu found on this machine (npusim needs none)"))
    else:
        report.extend(check_install(install, env, python_version))
        home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
        toolkit = os.path.realpath(home) if home else install.toolkit
        driver = os.path.join(install.root, "driver")
        driver_root = driver if os.path.isdir(driver) else None
    if install is not None or any(k.startswith("ASCEND_") for k in env):
        report.extend(check_libraries(
            env, toolkit, driver_root,
            cache_path=args.ld_cache,
            default_dirs=args.default_lib_dirs.split(":") if args.default_lib_dirs else None,
            requester=_torch_npu_library(),
        ))
    if not args.no_plog:
        report.extend(check_plogs(args.plog_root or plog_roots(env)))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.explain is not None:
        lines = explain(args.explain)
        if not lines:
            print("npusim doctor: no known message or error code in this text", file=sys.stderr)
            return 1
        print("\n".join(lines))
        return 0
    report = run_doctor(args)
    output = report.to_json() + "\n" if args.json else report.to_text(verbose=args.verbose)
    sys.stdout.write(output)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``npusim`` command.

Subcommands:

- ``npusim run SCRIPT [ARGS...]`` (or ``npusim run -m MODULE [ARGS...]``): run a Python program
  as ``python SCRIPT ARGS`` would (``sys.argv``, ``__main__``, ``sys.path[0]``), with the
  simulated NPU registered and ``import torch_npu`` served by npusim; then print a short
  summary to stderr (devices used, operators run, device memory peaks, simulated device time)
  and exit with the program's exit code.
  ``--from-cuda`` applies ``transfer_to_npu`` first (a CUDA program runs unchanged).
- ``npusim devices``: list the simulated devices and their chip.
- ``npusim migrate`` / ``npusim analyse``: offline CUDA-to-NPU migration and analysis
  (:mod:`npusim.migration`).
- ``npusim compare SCRIPT [ARGS...]``: msprobe-style precision triage against a CPU benchmark
  (:mod:`npusim.compare`).
- ``npusim doctor``, ``npusim collect-env``, ``npusim smi``: the triage tools of
  :mod:`npusim_tools` (the ``npusim`` console script runs them without importing npusim).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from typing import Sequence

__all__ = ["main", "build_parser"]


def _positive_steps(text: str) -> int:
    try:
        steps = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--steps expects a whole number of training steps, got {text!r}") from None
    if steps <= 0:
        raise argparse.ArgumentTypeError(f"--steps must be at least 1, got {steps}")
    return steps


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npusim",
        description="A software-simulated Ascend NPU for PyTorch.",
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    subcommands.required = True

    run = subcommands.add_parser(
        "run",
        help="run a Python program on the simulated NPU and summarize what it did",
        description="Run SCRIPT with ARGS like `python SCRIPT ARGS`, with the simulated NPU and "
        "torch_npu compatibility active, then print a summary to stderr.",
    )
    run.add_argument("--no-summary", action="store_true", help="do not print the summary")
    run.add_argument(
        "--steps", type=_positive_steps, default=None, metavar="N", help="the program runs N training steps: report time per step"
    )
    run.add_argument(
        "--from-cuda",
        action="store_true",
        help="apply torch_npu's transfer_to_npu first, so a CUDA program runs on npu unchanged",
    )
    run.add_argument("--report", metavar="HTML", help="profile the run and write an HTML report (npusim.profiler)")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script (like python -m)")
    run.add_argument("script", nargs="?", metavar="SCRIPT", help="the Python program")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")
    run.set_defaults(handler=_command_run)

    report = subcommands.add_parser("report", help="write the HTML report of a *_ascend_pt profile folder")
    report.add_argument("profile_dir", metavar="PROFILE_DIR")
    report.add_argument("-o", "--output", default="report.html", metavar="HTML")
    report.set_defaults(handler=_command_report)

    devices = subcommands.add_parser(
        "devices",
        help="list the simulated devices and their chip",
        description="List the simulated NPUs that this configuration gives, and the chip.",
    )
    devices.set_defaults(handler=_command_devices)

    from npusim.migration.commands import add_subcommands as add_migration_subcommands

    add_migration_subcommands(subcommands)
    from npusim.compare.command import add_subcommand as add_compare_subcommand

    add_compare_subcommand(subcommands)  # npusim compare (msprobe-style precision triage)

    # The triage tools live in npusim_tools; their own parsers read the arguments.
    for name, text in (
        ("doctor", "check the versions, environment, libraries and plog errors of npusim and of a real Ascend install"),
        ("collect-env", "print PyTorch's environment report with torch_npu's additions (CANN, torch-npu)"),
        ("smi", "npusim's npu-smi for the simulated server (e.g. `npusim smi info`)"),
        ("cann-home", "print the root of the CANN toolkit tree for C/C++ programs (source its set_env.sh)"),
    ):
        tool = subcommands.add_parser(name, help=text, add_help=False)
        tool.add_argument("tool_args", nargs=argparse.REMAINDER)
        tool.set_defaults(handler=lambda args, name=name: _command_tool(name, args.tool_args))
    return parser


def _command_tool(name: str, arguments: Sequence[str]) -> int:
    from npusim_tools.commands import run_tool_command

    return run_tool_command(name, list(arguments))


# ---------------------------------------------------------------------------------------------
# npusim run


def _exit_code_of(exit: SystemExit) -> int:
    code = exit.code
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code
    # A message: Python prints it and exits with 1.
    print(code, file=sys.stderr)
    return 1


def _print_program_exception(program_file: str | None) -> None:
    """Print the traceback as Python would for an uncaught exception, without npusim's and
    runpy's frames."""
    exc_type, exc_value, tb = sys.exc_info()
    if program_file is not None:
        target = os.path.abspath(program_file)
        walk = tb
        while walk is not None and os.path.abspath(walk.tb_frame.f_code.co_filename) != target:
            walk = walk.tb_next
        if walk is not None:
            tb = walk
    if exc_value is not None:
        exc_value = exc_value.with_traceback(tb)
    try:
        sys.excepthook(exc_type, exc_value, tb)
    except Exception:
        traceback.print_exception(exc_type, exc_value, tb)


def _run_program(args: argparse.Namespace) -> int:
    saved_argv, saved_path = sys.argv, list(sys.path)
    try:
        return _run_program_unrestored(args)
    finally:
        # Restored for callers that run programs in-process (tests, later subcommands).
        sys.argv = saved_argv
        sys.path[:] = saved_path


def _run_program_unrestored(args: argparse.Namespace) -> int:
    program_file: str | None = None
    if args.module:
        sys.argv = [args.module, *([args.script] if args.script else []), *args.args]
        # As `python -m`: the current folder comes first on sys.path.
        if sys.path:
            sys.path[0] = os.getcwd()
        else:
            sys.path.insert(0, os.getcwd())
        runner = lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True)  # noqa: E731
    else:
        program_file = args.script
        sys.argv = [program_file, *args.args]
        # As `python SCRIPT`: the script's folder comes first on sys.path.
        script_dir = os.path.dirname(os.path.abspath(program_file))
        if sys.path:
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        runner = lambda: runpy.run_path(program_file, run_name="__main__")  # noqa: E731
    try:
        runner()
    except SystemExit as exit:
        return _exit_code_of(exit)
    except KeyboardInterrupt:
        _print_program_exception(program_file)
        return 130
    except BaseException:
        _print_program_exception(program_file)
        return 1
    return 0


def _command_report(args: argparse.Namespace) -> int:
    from npusim.profiler import report as profile_report

    try:
        profile_report.build_report(args.profile_dir, args.output)
    except (FileNotFoundError, ValueError) as error:
        print(f"npusim report: {error}", file=sys.stderr)
        return 2
    print(f"[npusim] report: {args.output}", file=sys.stderr)
    return 0


def _command_run(args: argparse.Namespace) -> int:
    if not args.module and not args.script:
        print("npusim run: give a SCRIPT (or -m MODULE) to run", file=sys.stderr)
        return 2
    if not args.module and not os.path.exists(args.script):
        print(f"npusim run: can't open file '{args.script}': No such file or directory", file=sys.stderr)
        return 2
    import npusim  # noqa: F401  (registers npu, serves torch_npu)
    from npusim import _C

    if args.from_cuda:
        from npusim import _transfer_to_npu

        _transfer_to_npu.apply()

    try:
        _C._reset_operator_counts()
    except Exception:
        pass
    program = args.module and f"-m {args.module}" or args.script
    if args.report:
        from npusim.profiler import report as profile_report

        exit_code = profile_report.run_profiled(lambda: _run_program(args), args.report)
    else:
        exit_code = _run_program(args)
    if not args.no_summary:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        from npusim import _run_summary

        try:
            text = _run_summary.format_summary(_run_summary.collect(args.steps), program, exit_code)
        except Exception as error:  # the summary must never hide the program's outcome
            text = f"[npusim] no summary: {type(error).__name__}: {error}\n"
        sys.stderr.write(text)
        sys.stderr.flush()
    return exit_code


# ---------------------------------------------------------------------------------------------
# npusim devices


def _command_devices(args: argparse.Namespace) -> int:
    import torch

    import npusim  # noqa: F401
    from npusim import _C
    from npusim._run_summary import format_bytes

    count = torch.npu.device_count()
    if count == 0:
        try:
            torch.npu.init()
        except Exception as error:
            print(f"npusim: no simulated NPU: {error}", file=sys.stderr)
            return 1
        print("npusim: no simulated NPU is configured (device count 0)", file=sys.stderr)
        return 1
    try:
        chip = dict(_C._chip_info())
    except Exception as error:
        print(f"npusim: {error}", file=sys.stderr)
        return 1
    print(
        f"Chip: {chip.get('soc_name', '?')} (npu-smi name {chip.get('npu_smi_name', '?')}): "
        f"{chip.get('cube_cores', '?')} AI Cores (cube), {chip.get('vector_cores', '?')} vector cores, "
        f"{chip.get('ai_cpu_cores', '?')} AI CPUs, {chip.get('cube_frequency_mhz', '?')} MHz"
    )
    hbm = chip.get("hbm_bytes")
    usable = chip.get("total_memory_bytes")
    print(
        f"Memory: HBM {format_bytes(int(hbm)) if hbm else '?'} at {chip.get('hbm_bandwidth_gbps', '?')} GB/s, "
        f"{format_bytes(int(usable)) if usable else '?'} usable by PyTorch; "
        f"L2 cache {format_bytes(int(chip['l2_cache_bytes'])) if chip.get('l2_cache_bytes') else '?'}"
    )
    print(f"Devices: {count}")
    for index in range(count):
        try:
            properties = torch.npu.get_device_properties(index)
        except Exception as error:
            print(f"  npu:{index}  error: {error}")
            continue
        print(
            f"  npu:{index}  {properties.name}  {format_bytes(properties.total_memory)}  "
            f"physical id {properties.physical_id}  uuid {properties.uuid}"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``npusim`` command with ``argv`` (``sys.argv[1:]`` by default); return the exit
    code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    from npusim_tools.commands import TOOL_COMMANDS

    if arguments and arguments[0] in TOOL_COMMANDS:
        return _command_tool(arguments[0], arguments[1:])  # their options are their own parsers'
    parser = build_parser()
    args = parser.parse_args(arguments)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())

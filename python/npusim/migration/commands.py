"""``npusim migrate`` and ``npusim analyse`` on the command line (the options of
``pytorch_gpu2npu.sh`` and ``pytorch_analyse.sh``, contract §15)."""

from __future__ import annotations

import argparse
import sys


def add_subcommands(subcommands) -> None:
    migrate = subcommands.add_parser(
        "migrate",
        help="rewrite a CUDA PyTorch project for the NPU (msFmkTransplt's offline migration)",
        description="Copy SRC to OUT/<name>_msft/ with CUDA code migrated to NPU (comments and formatting kept), "
        "and write change_list.csv, unsupported_api.csv, unknown_api.csv, api_precision_advice.csv, "
        "api_performance_advice.csv, cuda_op_list.csv and msFmkTranspltlog.txt next to it.",
    )
    migrate.add_argument("source", metavar="SRC", help="the folder (or one .py file) to migrate")
    migrate.add_argument("-o", "--output", required=True, metavar="OUT", help="the folder that receives <name>_msft/")
    migrate.add_argument(
        "-v", "--version", dest="release_line", default="2.13", metavar="LINE", help="torch_npu release line (2.13)"
    )
    migrate.add_argument(
        "-s",
        "--specify-device",
        action="store_true",
        help="select the device from DEVICE_ID / NPU_CALCULATE_DEVICE in every file that imports torch",
    )
    modes = migrate.add_subparsers(dest="mode", metavar="distributed")
    distributed = modes.add_parser(
        "distributed",
        help="also make the entry file a multi-NPU (hccl) program, with run_distributed_npu.sh",
        description="Insert the hccl process-group setup into the entry file, wrap the model variable in "
        "DistributedDataParallel, and write run_distributed_npu.sh (output <name>_msft_multi/).",
    )
    distributed.add_argument("-m", "--main", dest="entry", required=True, metavar="ENTRY", help="entry file, relative to SRC")
    distributed.add_argument("-t", "--target-model", dest="model", required=True, metavar="MODEL", help="the model variable")
    migrate.set_defaults(handler=_command_migrate)

    analyse = subcommands.add_parser(
        "analyse",
        help="report what a CUDA PyTorch project needs for the NPU (msFmkTransplt's analysis)",
        description="Write the reports of one analysis mode into OUT/<name>_analysis/.",
    )
    analyse.add_argument("source", metavar="SRC", help="the folder (or one .py file) to analyse")
    analyse.add_argument("-o", "--output", required=True, metavar="OUT")
    analyse.add_argument(
        "-m",
        "--mode",
        default="torch_apis",
        choices=["torch_apis", "third_party", "affinity_apis", "dynamic_shape"],
        help="what to report (default torch_apis)",
    )
    analyse.add_argument("-v", "--version", dest="release_line", default="2.13", metavar="LINE")
    analyse.add_argument(
        "--run",
        nargs=argparse.REMAINDER,
        metavar="ENTRY ARGS",
        help="dynamic_shape: run the instrumented ENTRY (relative to SRC) with ARGS on npusim and write the report",
    )
    analyse.set_defaults(handler=_command_analyse)


def _libcst_missing(command: str) -> bool:
    try:
        import libcst  # noqa: F401
    except ImportError:
        print(f"npusim {command}: needs LibCST (pip install libcst, or pip install npusim[migrate])", file=sys.stderr)
        return True
    return False


def _command_migrate(args: argparse.Namespace) -> int:
    if _libcst_missing("migrate"):
        return 2
    from npusim.migration.migrator import MigrationError, migrate
    from npusim.migration.support_data import SupportDataError

    distributed = args.mode == "distributed"
    try:
        result = migrate(
            args.source,
            args.output,
            specify_device=args.specify_device,
            distributed_entry=args.entry if distributed else None,
            model_variable=args.model if distributed else None,
            release_line=args.release_line,
        )
    except (MigrationError, SupportDataError) as error:
        print(f"npusim migrate: {error}", file=sys.stderr)
        return 2
    files = result.files
    changes = sum(len(f.changes) for f in files)
    unsupported = sum(len(f.usage.unsupported) for f in files if f.usage)
    custom = sum(len(f.cuda_ops) + (len(f.usage.cuda_ops) if f.usage else 0) for f in files)
    errors = [f for f in files if f.error]
    print(
        f"npusim migrate: {len(files)} files, {len(result.changed_files)} migrated ({changes} changes), "
        f"{unsupported} places need a manual port, {custom} custom CUDA operators -> {result.output}"
    )
    for failed in errors:
        print(f"npusim migrate: {failed.path}: {failed.error}", file=sys.stderr)
    return 1 if errors else 0


def _command_analyse(args: argparse.Namespace) -> int:
    if _libcst_missing("analyse"):
        return 2
    from npusim.migration.analysis import analyse
    from npusim.migration.migrator import MigrationError
    from npusim.migration.support_data import SupportDataError

    try:
        folder = analyse(args.source, args.output, args.mode, release_line=args.release_line, run=args.run)
    except (MigrationError, SupportDataError) as error:
        print(f"npusim analyse: {error}", file=sys.stderr)
        return 2
    print(f"npusim analyse: {args.mode} reports in {folder}")
    return 0

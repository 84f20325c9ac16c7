"""``npusim migrate SRC -o OUT``: msFmkTransplt's offline migration (contract §15).

The tree under SRC is copied to ``OUT/<name>_msft/`` (``_msft_multi`` with ``distributed``):
Python files with CUDA code are rewritten (:mod:`npusim.migration.transform`), every other file
is copied byte for byte. The reports name files by their path relative to SRC.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import shutil
import stat
from dataclasses import dataclass, field

import libcst as cst

from npusim.migration import cuda_ops, reports, support_data
from npusim.migration.api_usage import ApiUsageVisitor, FileUsage
from npusim.migration.names import collect_aliases
from npusim.migration.transform import Change, Options, transform

RUN_SCRIPT = "run_distributed_npu.sh"
SKIPPED_DIRECTORIES = {"__pycache__", ".git", ".hg", ".svn"}


class MigrationError(RuntimeError):
    """Bad input (missing source, output inside the source, unknown entry file)."""


@dataclass
class FileResult:
    path: str  # relative to SRC
    usage: FileUsage | None = None
    changes: list[Change] = field(default_factory=list)
    cuda_ops: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class MigrationResult:
    output: str
    files: list[FileResult]

    @property
    def changed_files(self) -> list[str]:
        return [f.path for f in self.files if f.changes]


def analyse_python(text: str, data: support_data.SupportData, options: Options | None):
    """Parse one file; return (usage, transformed code or None, changes). ``options`` None:
    analysis only."""
    module = cst.parse_module(text)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    aliases = collect_aliases(module)
    visitor = ApiUsageVisitor(aliases.aliases, data)
    wrapper.visit(visitor)
    if options is None:
        return visitor.usage, None, []
    result = transform(module, wrapper, data.rules, aliases.aliases, aliases.imported_modules, options)
    return visitor.usage, result.module.code, result.changes


def source_files(source: str):
    """(absolute path, path relative to SRC) of every file, sorted, hidden VCS folders skipped."""
    if os.path.isfile(source):
        yield os.path.abspath(source), os.path.basename(source)
        return
    for root, directories, files in os.walk(source):
        directories[:] = sorted(d for d in directories if d not in SKIPPED_DIRECTORIES)
        for name in sorted(files):
            full = os.path.join(root, name)
            yield full, os.path.relpath(full, source)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (UnicodeDecodeError, OSError):
        return None


def check_paths(source: str, output: str, suffix: str) -> tuple[str, str]:
    source = os.path.abspath(source)
    if not os.path.exists(source):
        raise MigrationError(f"the source {source} does not exist")
    name = os.path.splitext(os.path.basename(source))[0] if os.path.isfile(source) else os.path.basename(source.rstrip(os.sep))
    target = os.path.join(os.path.abspath(output), name + suffix)
    if os.path.isdir(source) and (target == source or target.startswith(source + os.sep)):
        raise MigrationError(f"the output folder {target} is inside the source {source}: choose another -o")
    return source, target


def migrate(
    source: str,
    output: str,
    *,
    specify_device: bool = False,
    distributed_entry: str | None = None,
    model_variable: str | None = None,
    release_line: str = "2.13",
) -> MigrationResult:
    data = support_data.load(release_line)
    suffix = "_msft_multi" if distributed_entry else "_msft"
    source, target = check_paths(source, output, suffix)
    entry = None
    if distributed_entry:
        entry = os.path.normpath(distributed_entry)
        base = source if os.path.isdir(source) else os.path.dirname(source)
        if os.path.isabs(entry):
            entry = os.path.relpath(entry, base)
        if not os.path.isfile(os.path.join(base, entry)):
            raise MigrationError(f"the entry file {distributed_entry} (-m) is not in the source {source}")
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    logger = reports.open_log(target)
    logger.info("npusim migrate %s -> %s (torch_npu %s line)", source, target, release_line)
    jobs = []
    for full, relative in source_files(source):
        destination = os.path.join(target, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        options = Options(
            specify_device=specify_device,
            distributed_entry=entry is not None and os.path.normpath(relative) == entry,
            model_variable=model_variable,
        )
        jobs.append((full, relative, destination, options, release_line))
    try:
        results = _run_jobs(jobs)
        for result in results:
            _log_file(logger, result)
        if entry is not None:
            _write_run_script(target, entry)
            logger.info("wrote %s for the entry %s", RUN_SCRIPT, entry)
        write_api_reports(target, results, with_changes=True)
        logger.info(
            "done: %d files, %d migrated, %d changes",
            len(results),
            sum(1 for r in results if r.changes),
            sum(len(r.changes) for r in results),
        )
    finally:
        reports.close_log(logger)
    return MigrationResult(target, results)


# Text that any rule needs in a file (strings, torch.cuda, .cuda(), is_cuda, NCCL names,
# ProfilerActivity.CUDA / CUDAGraph, the profiler): a file without it only needs its report.
RULE_TRIGGERS = ("cuda", "CUDA", "nccl", "NCCL", "profiler")
# Below this many Python files, or with fewer CPUs (measured: on 2 busy CPUs the workers cost
# more than they save), one process is faster.
PARALLEL_THRESHOLD = 16
MIN_PARALLEL_CPUS = 4


def _migrate_file(job) -> FileResult:
    """Migrate or copy one file (a worker of :func:`migrate`)."""
    full, relative, destination, options, release_line = job
    result = FileResult(relative)
    if relative.endswith(".py"):
        text = _read_text(full)
        if text is not None:
            data = support_data.load(release_line)
            needs_rules = options.specify_device or options.distributed_entry or any(t in text for t in RULE_TRIGGERS)
            try:
                result.usage, code, result.changes = analyse_python(text, data, options if needs_rules else None)
            except cst.ParserSyntaxError as error:
                result.error = f"not migrated, cannot parse: {str(error).splitlines()[0]}"
                code = None
            if code is not None and result.changes and code != text:
                with open(destination, "w", encoding="utf-8", newline="") as file:
                    file.write(code)
                shutil.copymode(full, destination)
                return result
            result.changes = []
    elif relative.endswith(cuda_ops.SOURCE_SUFFIXES):
        text = _read_text(full)
        if text is not None:
            result.cuda_ops = cuda_ops.scan(text, os.path.splitext(relative)[1])
    shutil.copy2(full, destination)
    return result


def _run_jobs(jobs: list) -> list[FileResult]:
    """Files in parallel over the CPUs when there are many (forked workers share the loaded
    torch and data), in order of ``jobs``."""
    python_files = sum(1 for job in jobs if job[1].endswith(".py"))
    workers = min(os.cpu_count() or 1, 8)
    if (
        python_files < PARALLEL_THRESHOLD
        or workers < max(2, MIN_PARALLEL_CPUS)
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return [_migrate_file(job) for job in jobs]
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(_migrate_file, jobs, chunksize=max(1, len(jobs) // (workers * 4))))


def _log_file(logger, result: FileResult) -> None:
    if result.error:
        logger.error("%s: %s", result.path, result.error)
        return
    if result.changes:
        logger.info("%s: migrated, %d changes", result.path, len(result.changes))
        for change in result.changes:
            logger.info("%s:%d-%d %s %s", result.path, change.start, change.end, change.operation, change.message)
    usage = result.usage
    if usage is not None:
        for row in usage.unsupported:
            logger.warning("%s:%d needs a manual port: %s: %s", result.path, row.start, row.op, row.tips)
        for row in usage.unknown:
            logger.warning("%s:%d unknown API %s", result.path, row.start, row.op)
    for op in result.cuda_ops + (usage.cuda_ops if usage else []):
        logger.warning("%s: custom CUDA operator %s needs an Ascend C port", result.path, op)


def _api_rows(results: list[FileResult], attribute: str) -> list[list]:
    rows = []
    for result in results:
        if result.usage is None:
            continue
        for row in getattr(result.usage, attribute):
            rows.append([result.path, row.start, row.end, row.op, row.tips])
    return rows


def write_api_reports(folder: str, results: list[FileResult], with_changes: bool) -> None:
    """The five API reports (and ``change_list.csv`` for a migration)."""
    reports.write_csv(os.path.join(folder, "unsupported_api.csv"), reports.API_COLUMNS, _api_rows(results, "unsupported"))
    reports.write_csv(os.path.join(folder, "unknown_api.csv"), reports.API_COLUMNS, _api_rows(results, "unknown"))
    reports.write_csv(
        os.path.join(folder, "api_precision_advice.csv"), reports.API_COLUMNS, _api_rows(results, "precision")
    )
    reports.write_csv(
        os.path.join(folder, "api_performance_advice.csv"), reports.API_COLUMNS, _api_rows(results, "performance")
    )
    cuda_rows = []
    for result in results:
        for op in result.cuda_ops + (result.usage.cuda_ops if result.usage else []):
            cuda_rows.append([result.path, op])
    reports.write_csv(os.path.join(folder, "cuda_op_list.csv"), reports.CUDA_OP_COLUMNS, cuda_rows)
    if with_changes:
        change_rows = [
            [result.path, change.start, change.end, change.operation, change.message]
            for result in results
            for change in result.changes
        ]
        reports.write_csv(os.path.join(folder, "change_list.csv"), reports.CHANGE_COLUMNS, change_rows)


def _write_run_script(target: str, entry: str) -> None:
    path = os.path.join(target, RUN_SCRIPT)
    with open(path, "w", encoding="utf-8") as file:
        file.write(
            f"""#!/bin/bash
# Written by `npusim migrate ... distributed`: starts {entry} once per NPU of this server.
# RANK_SIZE NPUs (default 8) starting at FIRST_DEVICE (default 0); arguments go to the program.
# On npusim, run each rank under `npusim run` by setting NPU_LAUNCHER="python3 -m npusim run --no-summary".
set -u
cd "$(dirname "$0")"
export RANK_SIZE=${{RANK_SIZE:-8}}
FIRST_DEVICE=${{FIRST_DEVICE:-0}}
export MASTER_ADDR=${{MASTER_ADDR:-127.0.0.1}}
export MASTER_PORT=${{MASTER_PORT:-29688}}
export WORLD_SIZE=$RANK_SIZE
LAUNCHER=${{NPU_LAUNCHER:-python3}}
pids=()
for ((rank = 0; rank < RANK_SIZE; rank++)); do
  export RANK_ID=$rank RANK=$rank LOCAL_RANK=$rank
  export NPU_CALCULATE_DEVICE=$((FIRST_DEVICE + rank))
  $LAUNCHER {entry} "$@" > "train_rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${{pids[@]}}"; do
  wait "$pid" || status=$?
done
exit $status
"""
        )
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

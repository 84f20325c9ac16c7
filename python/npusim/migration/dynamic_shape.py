"""``npusim analyse -m dynamic_shape``: instrument a program and run it on npusim to find the
functions whose tensor shapes change between calls (the pitfall that recompiles graphs or stalls
on the real stack), before a real run.

SRC is copied to ``<out>/<name>_analysis/instrumented/`` with every ``def`` decorated by
:func:`npusim.migration.shape_probe.record` (LibCST keeps the code otherwise unchanged). With
``--run ENTRY ARGS`` the instrumented ENTRY runs under ``npusim run --from-cuda`` (a CUDA
program runs unchanged) and its exit writes ``msft_dynamic_shape_analysis_report.csv`` into the
analysis folder; without it, run the instrumented program yourself with
``NPUSIM_DYNAMIC_SHAPE_REPORT`` set.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys

import libcst as cst
from libcst.metadata import PositionProvider

from npusim.migration.migrator import MigrationError, source_files
from npusim.migration.shape_probe import REPORT_NAME, REPORT_VARIABLE

PROBE_MODULE = "_npusim_shape_probe"
PROBE_IMPORT = f"from npusim.migration import shape_probe as {PROBE_MODULE}"
RUN_TIMEOUT_S = 3600


class _Instrument(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.count = 0

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        line = self.get_metadata(PositionProvider, original_node.name).start.line
        decorator = cst.Decorator(
            decorator=cst.parse_expression(f"{PROBE_MODULE}.record({self.path!r}, {line})")
        )
        self.count += 1
        # Innermost, so it wraps the function itself under staticmethod / property / lru_cache.
        return updated_node.with_changes(decorators=[*updated_node.decorators, decorator])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.count:
            return updated_node
        body = list(updated_node.body)
        index = 0
        while index < len(body) and isinstance(body[index], cst.SimpleStatementLine) and (
            isinstance(body[index].body[0], cst.ImportFrom)
            and getattr(body[index].body[0].module, "value", "") == "__future__"
            or isinstance(body[index].body[0], cst.Expr)
            and isinstance(body[index].body[0].value, cst.SimpleString)
        ):
            index += 1
        body.insert(index, cst.parse_statement(PROBE_IMPORT + "\n"))
        return updated_node.with_changes(body=body)


def instrument(text: str, path: str) -> tuple[str, int]:
    module = cst.parse_module(text)
    transformer = _Instrument(path)
    new = cst.MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    return new.code, transformer.count


def analyse(source: str, target: str, run: list[str] | None, logger) -> str:
    instrumented = os.path.join(target, "instrumented")
    base = source if os.path.isdir(source) else os.path.dirname(source)
    functions = 0
    for full, relative in source_files(source):
        destination = os.path.join(instrumented, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        if relative.endswith(".py"):
            with open(full, encoding="utf-8") as file:
                text = file.read()
            try:
                code, count = instrument(text, relative)
            except cst.ParserSyntaxError as error:
                logger.error("%s: not instrumented, cannot parse: %s", relative, str(error).splitlines()[0])
                shutil.copy2(full, destination)
                continue
            functions += count
            with open(destination, "w", encoding="utf-8") as file:
                file.write(code)
        else:
            shutil.copy2(full, destination)
    logger.info("instrumented %d functions into %s", functions, instrumented)
    report = os.path.join(target, REPORT_NAME)
    if not run:
        logger.info("run the instrumented program with %s=%s to write the report", REPORT_VARIABLE, report)
        return report
    entry, arguments = run[0], run[1:]
    if not os.path.isfile(os.path.join(base, entry)):
        raise MigrationError(f"the entry {entry} (--run) is not in the source {source}")
    # The folder that holds the npusim package (this file is npusim/migration/dynamic_shape.py).
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ)
    environment[REPORT_VARIABLE] = report
    environment["PYTHONPATH"] = os.pathsep.join(
        [package_root] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else [])
    )
    command = [sys.executable, "-m", "npusim", "run", "--from-cuda", "--no-summary", entry, *arguments]
    logger.info("running %s in %s", " ".join(command), instrumented)
    completed = subprocess.run(
        command, cwd=instrumented, env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    logger.info("program exit code %d", completed.returncode)
    if completed.returncode != 0:
        logger.error("program output:\n%s%s", completed.stdout[-4000:], completed.stderr[-4000:])
        raise MigrationError(
            f"the instrumented program exited with code {completed.returncode}: "
            + (completed.stderr.strip().splitlines() or ["no output"])[-1]
        )
    if not os.path.exists(report):
        raise MigrationError(f"the instrumented program wrote no report at {report}")
    with open(report, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))[1:]
    dynamic = [row[0] for row in rows if "~" in row[4] or "~" in row[5] or " | [" in row[4] or " | [" in row[5]]
    logger.info("%d functions saw tensors; dynamic shapes in: %s", len(rows), ", ".join(dynamic) or "none")
    return report

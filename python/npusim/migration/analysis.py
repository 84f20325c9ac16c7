"""``npusim analyse SRC -o OUT -m MODE``: msFmkTransplt's analysis (``pytorch_analyse.sh``,
contract §15), reports only, into ``OUT/<name>_analysis/``:

- ``torch_apis``: the five API reports of a migration (unsupported, unknown, precision and
  performance advice, custom CUDA operators);
- ``third_party``: SRC is a third-party library; every library function that reaches an
  unsupported, unknown or CUDA-only torch API (directly or through other functions of the
  library) is listed: ``full_unsupported_results.csv`` (``File, 3rd-party API, Message``),
  ``framework_unsupported_op.csv``, ``unknown_op.csv`` and ``migration_needed_op.csv``
  (``Torch API, Affected 3rd-party API``), ``cuda_op.csv`` (``File, Api``);
- ``affinity_apis``: calls and code patterns that torch_npu has a fused API for,
  ``affinity_api_call.csv``;
- ``dynamic_shape``: see :mod:`npusim.migration.dynamic_shape`.
"""

from __future__ import annotations

import os
import shutil

import libcst as cst
from libcst.metadata import PositionProvider

from npusim.migration import cuda_ops, reports, support_data
from npusim.migration.migrator import (
    FileResult,
    MigrationError,
    _read_text,
    analyse_python,
    check_paths,
    source_files,
    write_api_reports,
)
from npusim.migration.names import collect_aliases, qualified_name

MODES = ("torch_apis", "third_party", "affinity_apis", "dynamic_shape")
MIGRATION_TRIGGERS = ("torch.cuda", "torch.backends.cuda", "torch.backends.cudnn", "torch.distributed.is_nccl_available")


def analyse(
    source: str,
    output: str,
    mode: str = "torch_apis",
    *,
    release_line: str = "2.13",
    run: list[str] | None = None,
) -> str:
    """Write the reports of ``mode``; return the output folder."""
    if mode not in MODES:
        raise MigrationError(f"unknown analysis mode {mode!r} (choose from {', '.join(MODES)})")
    data = support_data.load(release_line)
    source, target = check_paths(source, output, "_analysis")
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    logger = reports.open_log(target)
    logger.info("npusim analyse -m %s %s -> %s (torch_npu %s line)", mode, source, target, release_line)
    try:
        if mode == "torch_apis":
            results = _scan(source, data, logger)
            write_api_reports(target, results, with_changes=False)
        elif mode == "affinity_apis":
            _affinity(source, target, data, logger)
        elif mode == "third_party":
            _third_party(source, target, data, logger)
        else:
            from npusim.migration import dynamic_shape

            dynamic_shape.analyse(source, target, run, logger)
    finally:
        reports.close_log(logger)
    return target


def _scan(source: str, data, logger) -> list[FileResult]:
    results = []
    for full, relative in source_files(source):
        result = FileResult(relative)
        text = _read_text(full) if relative.endswith((".py",) + cuda_ops.SOURCE_SUFFIXES) else None
        if text is None:
            continue
        if relative.endswith(".py"):
            try:
                result.usage, _, _ = analyse_python(text, data, None)
            except cst.ParserSyntaxError as error:
                logger.error("%s: cannot parse: %s", relative, str(error).splitlines()[0])
                continue
        else:
            result.cuda_ops = cuda_ops.scan(text, os.path.splitext(relative)[1])
        results.append(result)
    return results


def _affinity(source: str, target: str, data, logger) -> None:
    rows = []
    for result in _scan(source, data, logger):
        if result.usage is None:
            continue
        for row in result.usage.affinity:
            rows.append([result.path, row.start, row.end, row.api_type, row.call_name, row.affinity_name])
    reports.write_csv(os.path.join(target, "affinity_api_call.csv"), reports.AFFINITY_COLUMNS, rows)
    logger.info("%d affinity API candidates", len(rows))


# ---------------------------------------------------------------------------------------------
# third_party: which functions of a library reach which torch APIs


class _FunctionCalls(cst.CSTVisitor):
    """For each function and method of a module: the qualified names it calls."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module_name: str, aliases: dict[str, str]):
        super().__init__()
        self.module_name = module_name
        self.aliases = aliases
        self.scope: list[str] = []
        self.calls: dict[str, set[str]] = {}

    def _current(self) -> str:
        return ".".join([self.module_name] + self.scope) if self.scope else self.module_name

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.scope.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scope.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.scope.append(node.name.value)
        self.calls.setdefault(self._current(), set())
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope.pop()

    def _add(self, name: str | None) -> None:
        if name:
            self.calls.setdefault(self._current(), set()).add(name)

    def visit_Call(self, node: cst.Call) -> bool:
        name = qualified_name(node.func, self.aliases)
        if name is None and isinstance(node.func, cst.Name):
            name = f"{self.module_name}.{node.func.value}"  # a function of this module
        if name is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("cuda",):
            name = "torch.Tensor.cuda"
        self._add(name)
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = qualified_name(node, self.aliases)
        if name is not None and name.startswith("torch."):
            self._add(name)
            return False
        return True


def _module_name(relative: str, package: str) -> str:
    parts = relative[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package] + parts) if package else ".".join(parts)


def _third_party(source: str, target: str, data, logger) -> None:
    package = os.path.basename(source.rstrip(os.sep)) if os.path.isdir(source) else ""
    calls: dict[str, set[str]] = {}
    files: dict[str, str] = {}
    cuda_rows = []
    for full, relative in source_files(source):
        text = _read_text(full)
        if text is None:
            continue
        if relative.endswith(cuda_ops.SOURCE_SUFFIXES):
            cuda_rows.extend([relative, op] for op in cuda_ops.scan(text, os.path.splitext(relative)[1]))
            continue
        if not relative.endswith(".py"):
            continue
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as error:
            logger.error("%s: cannot parse: %s", relative, str(error).splitlines()[0])
            continue
        name = _module_name(relative, package)
        visitor = _FunctionCalls(name, collect_aliases(module).aliases)
        cst.MetadataWrapper(module, unsafe_skip_copy=True).visit(visitor)
        for function, called in visitor.calls.items():
            calls.setdefault(function, set()).update(called)
            files[function] = relative
    # Torch APIs reached by each library function, through the library's own functions.
    reached: dict[str, set[str]] = {}

    def torch_apis(function: str, visiting: set[str]) -> set[str]:
        if function in reached:
            return reached[function]
        if function in visiting:
            return set()
        visiting.add(function)
        found = set()
        for callee in calls.get(function, ()):
            if callee.startswith("torch.") or callee.startswith("triton."):
                found.add(callee)
            elif callee in calls:
                found |= torch_apis(callee, visiting)
        visiting.discard(function)
        reached[function] = found
        return found

    unsupported_rows, framework, unknown, migration = [], [], [], []
    for function in sorted(calls):
        public = not any(part.startswith("_") for part in function.split(".")[1:])
        if not public:
            continue
        for api in sorted(torch_apis(function, set())):
            if api in data.unsupported:
                unsupported_rows.append([files[function], function, f"{api}: {data.unsupported[api]}"])
                framework.append([api, function])
            elif api.startswith("torch.") and not api.startswith(("torch.npu",)) and not support_data.api_exists(api):
                unsupported_rows.append([files[function], function, f"{api}: unknown to PyTorch and torch_npu"])
                unknown.append([api, function])
            elif api.startswith(MIGRATION_TRIGGERS) or api == "torch.Tensor.cuda":
                migration.append([api, function])
    reports.write_csv(os.path.join(target, "full_unsupported_results.csv"), reports.THIRD_PARTY_COLUMNS, unsupported_rows)
    reports.write_csv(os.path.join(target, "framework_unsupported_op.csv"), reports.TORCH_TO_THIRD_PARTY_COLUMNS, framework)
    reports.write_csv(os.path.join(target, "unknown_op.csv"), reports.TORCH_TO_THIRD_PARTY_COLUMNS, unknown)
    reports.write_csv(os.path.join(target, "migration_needed_op.csv"), reports.TORCH_TO_THIRD_PARTY_COLUMNS, migration)
    reports.write_csv(os.path.join(target, "cuda_op.csv"), reports.CUDA_OP_COLUMNS, cuda_rows)
    logger.info(
        "%d library functions; %d unsupported, %d unknown, %d needing migration",
        len(calls), len(framework), len(unknown), len(migration),
    )

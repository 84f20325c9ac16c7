#!/usr/bin/env python3
"""Checks the layers of npusim's Python packages: no import runs back up, no import cycle.

Reads every module under python/npusim, python/npusim_tools and python/torch_npu (and the
start-up hook python/_npusim_torch_npu_hook.py) with ``ast``, without importing any of them, and
resolves every import it finds: at module level and inside functions, absolute and relative,
``from package import submodule``, and string literals given to ``importlib.import_module`` /
``__import__``. (A lookup in ``sys.modules`` is not an import: it finds a module only when
something else loaded it; the tree uses it to ask whether a module is loaded.) Each module gets
its layer from ``LAYERS`` below (longest matching prefix). The check fails when

- a module imports a module of a higher layer (an upward import),
- modules import each other in a cycle (a strongly connected component of the import graph
  with more than one module; imports inside functions count, since a lazy import that only
  hides a cycle is still a cycle), or
- a module has no layer in the table.

Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``: those packages are edges too,
except the importer's own packages, which ran before it (every module of npusim would otherwise
depend on the package root). The package root ``npusim/__init__`` is the assembly point: it
loads the layers and calls the registration hooks of the features, so it sits above them.

Usage: ``python3 scripts/check_layers.py [--edges] [--quiet]``; exit status 1 on any violation.
Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PYTHON_ROOT = Path(__file__).resolve().parent.parent / "python"
CHECKED = ("npusim", "npusim_tools", "torch_npu", "_npusim_torch_npu_hook")

# The layer of each module: the longest prefix of its dotted name listed here ("pkg" covers the
# package and its modules, "pkg.__init__" the package's own __init__ only). A module imports
# modules of its own layer or of lower layers, never of a higher one.
LAYERS: dict[str, int] = {
    # 0 base: the error-code suffix (the device module registers who names the current device),
    # the native libraries (npusim._C, torch.ops.npu, the profiler library), the sync-label
    # helper the backend calls, the start-up hook that finds torch_npu without importing torch,
    # and npusim_tools (the triage tools and the readers of the simulated stack's data files:
    # they import neither torch nor npusim, so npusim can use them and they work where it fails).
    "_npusim_torch_npu_hook": 0,
    "npusim._C": 0,
    "npusim._error_code": 0,
    "npusim._ops": 0,
    "npusim._profiler_lib": 0,
    "npusim._sync_labels": 0,
    "npusim_tools": 0,
    # 1 the device module torch.npu: lazy initialization, devices, streams, memory, random,
    # options, formats, versions, and the device's numerics switches (autocast state, INF_NAN).
    "npusim.npu": 1,
    # 2 features on top of the device, each registering itself with the layers below when the
    # package root loads it: amp (torch.npu.amp), distributed (hccl), profiler, compile (Dynamo,
    # Inductor, NPUGraph), migration and transfer_to_npu, compare (msprobe's dump and compare),
    # estimate-only mode, the performance, placement and run-summary reports, serialization,
    # DataParallel, the torch_npu name finder.
    "npusim.npu.amp": 2,
    "npusim.distributed": 2,
    "npusim._distributed_C": 2,
    "npusim.profiler": 2,
    "npusim.compile": 2,
    "npusim.migration": 2,
    "npusim.compare": 2,
    "npusim._transfer_to_npu": 2,
    "npusim.estimate": 2,
    "npusim.performance": 2,
    "npusim.placement": 2,
    "npusim._run_summary": 2,
    "npusim._serialization": 2,
    "npusim._data_parallel": 2,
    "npusim._compat_finder": 2,
    # 3 the package root: npusim/__init__ assembles the layers (loads the native library,
    # registers torch.npu, loads the features and calls their registrations).
    "npusim.__init__": 3,
    # 4 the faces of Ascend's packages: npusim/_torch_npu_compat (served as torch_npu), the
    # in-tree torch_npu shim of a source checkout, and npusim/compare/_msprobe (served as msprobe).
    "npusim._torch_npu_compat": 4,
    "torch_npu": 4,
    "npusim.compare._msprobe": 4,
    # 5 the command line and the programs run in a process of their own: npusim.cli, python -m
    # npusim, the console scripts of npusim_tools.launcher, the doctor's import probe, and the
    # runs of npusim compare (python -m npusim.compare.runner / explain_worker, and the benchmark
    # device the runner installs in its own process, torch_npu's operators included).
    "npusim.cli": 5,
    "npusim.__main__": 5,
    "npusim_tools.launcher": 5,
    "npusim_tools.doctor.probe": 5,
    "npusim.compare.runner": 5,
    "npusim.compare.explain_worker": 5,
    "npusim.compare.bench_device": 5,
}

LAYER_NAMES = {
    0: "base",
    1: "device module (torch.npu)",
    2: "features",
    3: "package root (assembly)",
    4: "faces of Ascend's packages (torch_npu, msprobe)",
    5: "command line",
}

# Names that import as other modules of the tree: torch_npu is served from
# npusim/_torch_npu_compat, torch_npu.npu and torch.npu are npusim.npu, torchair is served from
# npusim/compile/_torchair.
ALIASES = {
    "torch_npu.npu": "npusim.npu",
    "torch.npu": "npusim.npu",
    "torch_npu": "npusim._torch_npu_compat",
    "torchair": "npusim.compile._torchair",
    "msprobe": "npusim.compare._msprobe",
}

# Extension modules that exist only after a build (scripts/dev-build.sh copies them in).
NATIVE_MODULES = ("npusim._C", "npusim._distributed_C")
_EXTENSION_MODULE = re.compile(r"[A-Za-z_]\w*\.(cpython|abi3|cp3)[^/]*\.(so|pyd)")


@dataclass
class Module:
    name: str  # dotted name; a package by its own name (npusim.npu)
    path: Path | None  # None for an extension module not built yet
    is_package: bool


@dataclass
class Edge:
    source: str
    target: str
    line: int
    kind: str  # "import", "from", "import_module"; ", package of X" for a parent package of X
    in_function: bool


@dataclass
class Graph:
    root: Path
    parent_packages: bool
    modules: dict[str, Module] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)


def discover(root: Path) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for top in CHECKED:
        single = root / f"{top}.py"
        if single.is_file():
            modules[top] = Module(top, single, False)
        folder = root / top
        if not (folder / "__init__.py").is_file():
            continue
        for directory, subdirectories, files in os.walk(folder):
            subdirectories[:] = sorted(d for d in subdirectories if not d.startswith((".", "__pycache__")))
            if "__init__.py" not in files:
                subdirectories[:] = []  # data folders (npusim/data, npusim_tools/bin) hold no modules
                continue
            package = ".".join(Path(directory).relative_to(root).parts)
            for file in sorted(files):
                if file == "__init__.py":
                    modules[package] = Module(package, Path(directory) / file, True)
                elif file.endswith(".py"):
                    name = f"{package}.{file[:-3]}"
                    modules[name] = Module(name, Path(directory) / file, False)
                elif _EXTENSION_MODULE.fullmatch(file):
                    # A Python extension (_C.cpython-311-x86_64-linux-gnu.so); the plain shared
                    # libraries next to it (libnpusim_ops.so) are loaded by path, not imported.
                    name = f"{package}.{file.split('.', 1)[0]}"
                    modules.setdefault(name, Module(name, Path(directory) / file, False))
    for name in NATIVE_MODULES:
        modules.setdefault(name, Module(name, None, False))
    return modules


def layer_of(module: str) -> int | None:
    # Every name is matched with ".__init__" appended (no real module has that part), so that a
    # "pkg.__init__" entry matches the package itself only and "pkg" matches it and its modules.
    key = module + ".__init__"
    best, best_length = None, -1
    for prefix, layer in LAYERS.items():
        if (key == prefix or key.startswith(prefix + ".")) and len(prefix) > best_length:
            best, best_length = layer, len(prefix)
    return best


def _apply_alias(name: str) -> str:
    for alias in sorted(ALIASES, key=len, reverse=True):
        if name == alias or name.startswith(alias + "."):
            return ALIASES[alias] + name[len(alias):]
    return name


def resolve(name: str, modules: dict[str, Module]) -> str | None:
    """The module of the tree that importing ``name`` runs (itself, or the longest existing
    prefix for a name that is an attribute), or None when it is outside the tree."""
    parts = _apply_alias(name).split(".")
    for length in range(len(parts), 0, -1):
        candidate = ".".join(parts[:length])
        if candidate in modules:
            return candidate
    return None


def _packages_of(module: str) -> set[str]:
    """The packages that contain ``module`` (``a`` and ``a.b`` for ``a.b.c``)."""
    parts = module.split(".")
    return {".".join(parts[:length]) for length in range(1, len(parts))}


def _absolute(module: Module, level: int, name: str | None) -> str:
    """The absolute name of the relative import ``from {'.' * level}{name} import ...``."""
    package_parts = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    if level > 1:
        package_parts = package_parts[: len(package_parts) - (level - 1)]
    base = ".".join(package_parts)
    if name:
        return f"{base}.{name}" if base else name
    return base


def _string_argument(call: ast.Call, position: int, keyword: str) -> str | None:
    for argument in call.keywords:
        if argument.arg == keyword and isinstance(argument.value, ast.Constant) and isinstance(argument.value.value, str):
            return argument.value.value
    if len(call.args) > position:
        value = call.args[position]
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
    return None


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, module: Module, modules: dict[str, Module], parent_packages: bool):
        self.module = module
        self.modules = modules
        self.parent_packages = parent_packages
        self.edges: list[Edge] = []
        self._seen: set[tuple[str, int, str]] = set()
        self._function_depth = 0

    def _add(self, name: str, line: int, kind: str) -> None:
        target = resolve(name, self.modules)
        if target is None or target == self.module.name:
            return
        in_function = self._function_depth > 0
        self._append(Edge(self.module.name, target, line, kind, in_function))
        if not self.parent_packages:
            return
        # Importing a.b.c runs a/__init__ and a/b/__init__ first, unless they are packages of
        # the importer itself (those ran before it).
        own = _packages_of(self.module.name) | {self.module.name}
        for package in sorted(_packages_of(target) - own):
            if package in self.modules:
                self._append(Edge(self.module.name, package, line, f"{kind}, package of {target}", in_function))

    def _append(self, edge: Edge) -> None:
        key = (edge.target, edge.line, edge.kind)  # "from x import a, b" is one import of x
        if key not in self._seen:
            self._seen.add(key)
            self.edges.append(edge)

    def _visit_function(self, node) -> None:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno, "import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(self.module, node.level, node.module) if node.level else (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                # "from package import name" imports the submodule package.name if there is one.
                candidate = f"{base}.{alias.name}"
                if resolve(candidate, self.modules) == _apply_alias(candidate):
                    self._add(candidate, node.lineno, "from")
                    continue
            self._add(base, node.lineno, "from")

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if called in ("import_module", "__import__"):
            name = _string_argument(node, 0, "name")
            if name is not None:
                if name.startswith("."):
                    package = _string_argument(node, 1, "package") or ""
                    level = len(name) - len(name.lstrip("."))
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - (level - 1)]) if level > 1 else package
                    name = f"{base}.{name.lstrip('.')}" if name.lstrip(".") else base
                self._add(name, node.lineno, "import_module")
        self.generic_visit(node)


def build_graph(root: Path = PYTHON_ROOT, parent_packages: bool = True) -> Graph:
    graph = Graph(root=root, parent_packages=parent_packages, modules=discover(root))
    for module in graph.modules.values():
        if module.path is None or module.path.suffix != ".py":
            continue
        tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
        collector = _ImportCollector(module, graph.modules, parent_packages)
        collector.visit(tree)
        graph.edges.extend(collector.edges)
    return graph


def strongly_connected_components(nodes: list[str], successors: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep graphs)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        index[start] = lowlink[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(successors.get(start, ()))))]
        while work:
            node, children = work[-1]
            descended = False
            for child in children:
                if child not in index:
                    index[child] = lowlink[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(successors.get(child, ())))))
                    descended = True
                    break
                if child in on_stack:
                    lowlink[node] = min(lowlink[node], index[child])
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


@dataclass
class Result:
    graph: Graph
    upward: list[Edge]
    cycles: list[tuple[list[str], list[Edge]]]
    unlayered: list[str]

    @property
    def failed(self) -> bool:
        return bool(self.upward or self.cycles or self.unlayered)


def check(root: Path = PYTHON_ROOT, parent_packages: bool = True) -> Result:
    graph = build_graph(root, parent_packages)
    unlayered = sorted(name for name in graph.modules if layer_of(name) is None)
    upward = [
        edge
        for edge in graph.edges
        if None not in (layer_of(edge.source), layer_of(edge.target)) and layer_of(edge.source) < layer_of(edge.target)
    ]
    successors: dict[str, set[str]] = {}
    for edge in graph.edges:
        successors.setdefault(edge.source, set()).add(edge.target)
    cycles = []
    for component in strongly_connected_components(sorted(graph.modules), successors):
        if len(component) > 1:
            members = set(component)
            inside = [edge for edge in graph.edges if edge.source in members and edge.target in members]
            cycles.append((component, inside))
    return Result(graph, upward, cycles, unlayered)


def _where(edge: Edge, graph: Graph) -> str:
    path = graph.modules[edge.source].path
    location = f"{path.relative_to(graph.root.parent)}:{edge.line}" if path else edge.source
    scope = "in a function" if edge.in_function else "at module level"
    return f"{location}: {edge.source} -> {edge.target} ({edge.kind}, {scope})"


def report(result: Result, show_edges: bool = False, quiet: bool = False) -> str:
    graph = result.graph
    lines = []
    pairs = {(edge.source, edge.target) for edge in graph.edges}
    per_layer: dict[int | None, int] = {}
    for name in graph.modules:
        per_layer[layer_of(name)] = per_layer.get(layer_of(name), 0) + 1
    function_level = sum(1 for edge in graph.edges if edge.in_function)
    lines.append(
        f"check_layers: {len(graph.modules)} modules, {len(graph.edges)} imports "
        f"({function_level} inside functions; parent packages {'included' if graph.parent_packages else 'left out'}) "
        f"between {len(pairs)} module pairs"
    )
    for layer in sorted(per_layer, key=lambda value: -1 if value is None else value):
        name = "no layer" if layer is None else f"layer {layer} {LAYER_NAMES[layer]}"
        lines.append(f"  {name}: {per_layer[layer]} modules")
    if show_edges:
        for source, target in sorted(pairs):
            lines.append(f"  edge {source} [{layer_of(source)}] -> {target} [{layer_of(target)}]")
    upward_pairs = {(edge.source, edge.target) for edge in result.upward}
    lines.append(f"upward imports: {len(result.upward)} (between {len(upward_pairs)} module pairs)")
    if not quiet:
        for edge in sorted(result.upward, key=lambda e: (e.source, e.line, e.target)):
            lines.append(f"  {_where(edge, graph)}: layer {layer_of(edge.source)} imports layer {layer_of(edge.target)}")
    lines.append(f"import cycles: {len(result.cycles)}")
    if not quiet:
        for component, inside in result.cycles:
            lines.append(f"  cycle of {len(component)} modules: {', '.join(component)}")
            for edge in sorted(inside, key=lambda e: (e.source, e.line, e.target)):
                lines.append(f"    {_where(edge, graph)}")
    lines.append(f"modules without a layer: {len(result.unlayered)}")
    for name in result.unlayered:
        lines.append(f"  {name}: add its prefix to LAYERS in scripts/check_layers.py")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="also list every module pair with its layers")
    parser.add_argument("--quiet", action="store_true", help="counts only")
    parser.add_argument(
        "--explicit-only",
        action="store_true",
        help="leave out the parent packages an import runs (to see the cycles a package-level one joins)",
    )
    parser.add_argument("--root", type=Path, default=PYTHON_ROOT, help="the python/ folder to check")
    arguments = parser.parse_args(argv)
    result = check(arguments.root, parent_packages=not arguments.explicit_only)
    print(report(result, show_edges=arguments.edges, quiet=arguments.quiet))
    print("FAILED" if result.failed else "OK: no upward import, no import cycle")
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())

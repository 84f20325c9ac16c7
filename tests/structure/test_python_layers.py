"""The layers of npusim's Python packages (scripts/check_layers.py): no upward import, no cycle.

The checker reads the sources with ``ast`` and imports nothing of npusim or torch, so this test
is fast. The second half runs it on small trees written here, to show that it finds what it
claims to find (an upward import inside a function, a cycle hidden in a function, an
``importlib.import_module`` literal, a relative import, the parent package an import runs).
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]


def _load_checker():
    spec = importlib.util.spec_from_file_location("check_layers", REPOSITORY / "scripts" / "check_layers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


check_layers = _load_checker()


def test_the_python_packages_have_no_upward_import_and_no_cycle():
    result = check_layers.check()
    assert not result.failed, check_layers.report(result)


def test_every_package_is_read():
    modules = check_layers.build_graph().modules
    for name in ("npusim", "npusim.npu", "npusim.npu.amp", "npusim.cli", "npusim._torch_npu_compat",
                 "npusim_tools.launcher", "torch_npu", "_npusim_torch_npu_hook"):
        assert name in modules
    assert len(modules) > 100


def test_the_layers_of_known_modules():
    layer_of = check_layers.layer_of
    assert layer_of("npusim._error_code") == 0
    assert layer_of("npusim_tools.doctor.command") == 0
    assert layer_of("npusim.npu.memory") == 1
    assert layer_of("npusim.npu.amp.grad_scaler") == 2
    assert layer_of("npusim.compile.graphs") == 2
    assert layer_of("npusim") == 3
    assert layer_of("npusim._torch_npu_compat.profiler") == 4
    assert layer_of("npusim.cli") == 5
    assert layer_of("npusim_tools.launcher") == 5
    assert layer_of("npusim.something_new") is None  # a new module must be given its layer


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


_PACKAGES = {
    "npusim/__init__.py": "from npusim import npu\n",
    "npusim/_error_code.py": "",
    "npusim/npu/__init__.py": "",
    "npusim/compile/__init__.py": "",
}


def test_an_upward_import_inside_a_function_is_found(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/npu/memory.py": """
        def snapshot():
            from npusim.compile import graphs
            return graphs
        """, "npusim/compile/graphs.py": ""})
    result = check_layers.check(root)
    found = {(edge.source, edge.target, edge.in_function) for edge in result.upward}
    assert ("npusim.npu.memory", "npusim.compile.graphs", True) in found
    assert ("npusim.npu.memory", "npusim.compile", True) in found  # the package it runs first
    assert result.failed


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/compile/graphs.py": "from npusim.compile import kernel_launch\n",
                            "npusim/compile/kernel_launch.py": """
        def record():
            from . import graphs
        """})
    result = check_layers.check(root)
    assert [component for component, _ in result.cycles] == [["npusim.compile.graphs", "npusim.compile.kernel_launch"]]
    assert not result.upward


def test_import_module_literals_and_aliases_are_resolved(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/_torch_npu_compat/__init__.py": "",
                            "npusim/_torch_npu_compat/profiler.py": "", "npusim/estimate.py": """
        import importlib

        def patch():
            return importlib.import_module("torch_npu.profiler")
        """})
    result = check_layers.check(root)
    assert [(edge.source, edge.target, edge.kind) for edge in result.upward if "package" not in edge.kind] == [
        ("npusim.estimate", "npusim._torch_npu_compat.profiler", "import_module")
    ]


def test_a_module_without_a_layer_fails(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/unplaced.py": ""})
    result = check_layers.check(root)
    assert result.unlayered == ["npusim.unplaced"]
    assert result.failed


def test_a_clean_tree_passes_and_the_summary_counts_it(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/npu/memory.py": "from npusim._error_code import *\n",
                            "npusim/cli.py": "import npusim\nfrom npusim.npu import memory\n"})
    result = check_layers.check(root)
    assert not result.failed
    summary = check_layers.report(result)
    assert "upward imports: 0" in summary and "import cycles: 0" in summary
    assert "layer 5 command line: 1 modules" in summary


@pytest.mark.parametrize("parent_packages", [True, False])
def test_a_package_root_imported_by_its_own_modules_is_not_an_edge(tmp_path, parent_packages):
    # npusim._error_code runs after npusim/__init__ began: importing a sibling does not import the
    # root again, so the root's imports of the layers do not make every module part of a cycle.
    root = _tree(tmp_path, {**_PACKAGES, "npusim/npu/devices.py": "from npusim import _error_code\n"})
    graph = check_layers.build_graph(root, parent_packages)
    assert ("npusim.npu.devices", "npusim") not in {(edge.source, edge.target) for edge in graph.edges}


def test_extension_modules_are_modules_and_plain_shared_libraries_are_not(tmp_path):
    root = _tree(tmp_path, {**_PACKAGES, "npusim/_distributed_C.cpython-311-x86_64-linux-gnu.so": "",
                            "npusim/libnpusim_ops.so": ""})
    modules = check_layers.discover(root)
    assert "npusim._distributed_C" in modules and modules["npusim._distributed_C"].path is not None
    assert "npusim.libnpusim_ops" not in modules


def test_the_command_line_prints_the_summary_and_succeeds():
    import subprocess

    done = subprocess.run([sys.executable, str(REPOSITORY / "scripts" / "check_layers.py"), "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "upward imports: 0" in done.stdout and "import cycles: 0" in done.stdout
    assert done.stdout.rstrip().endswith("OK: no upward import, no import cycle")

"""The root of npusim's tests.

npusim is imported from ``python/`` of the checkout when the extension is built there (so the
tests test the sources, not an older installed copy), else the installed npusim. The folder
``tests/`` itself goes on ``sys.path`` so that every test folder shares :mod:`npusim_testing`
(helpers live there, not in conftest modules: every folder has a conftest, and
``from conftest import`` would pick whichever folder's pytest loaded first).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PYTHON_SOURCE = TESTS.parent / "python"

# Before anything imports torch: with npusim installed, `import torch` autoloads the npusim
# found first on sys.path.
if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))
if str(TESTS) not in sys.path:
    sys.path.insert(1, str(TESTS))

from npusim_testing.fresh_process import make_entry_point_folder  # noqa: E402


@pytest.fixture(scope="session")
def autoload_folder(tmp_path_factory) -> Path:
    """A folder whose distribution declares npusim's ``torch.backends`` entry point."""
    return make_entry_point_folder(tmp_path_factory.mktemp("autoload"))


@pytest.fixture()
def npu():
    """``torch.npu`` with npusim loaded."""
    import torch

    import npusim  # noqa: F401

    return torch.npu

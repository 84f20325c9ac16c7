"""Fixtures of npusim's Python tests; the helpers are in python_subprocess.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from python_subprocess import make_entry_point_folder

@pytest.fixture(scope="session")
def autoload_folder(tmp_path_factory) -> Path:
    return make_entry_point_folder(tmp_path_factory.mktemp("autoload"))


@pytest.fixture()
def npu():
    """``torch.npu`` with npusim loaded."""
    import torch

    import npusim  # noqa: F401

    return torch.npu

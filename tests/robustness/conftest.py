"""Robustness tests: crashes, hangs and bad input, each in a subprocess with a timeout."""

from __future__ import annotations

import pytest

from robustness_support import run_python


@pytest.fixture
def python_runner():
    return run_python

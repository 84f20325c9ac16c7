"""Regression tests for npusim defects found by running PyTorch's device-generic test suites
(common_device_type, device ``npu``) against npusim.

npusim is imported from ``python/`` of the checkout when the extension is built there; the tests
import nothing from this module (a conftest module name is shared by every test folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))

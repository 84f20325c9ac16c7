"""Tests of the torch_npu surface, part 2 (issue 18): when the environment is read, GradScaler
with several optimizers, device properties, streams, interprocess events, sparse layouts and
error codes.

As in ``tests/python``: npusim is imported from ``python/`` of the checkout when the extension is
built there. Helpers live in :mod:`surface2_subprocess` (a conftest module name is shared by every
test folder, so tests import nothing from here).
"""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))

"""Data-loading tests (pinned memory, DataLoader worker processes).

As in ``tests/python``: npusim is imported from ``python/`` of the checkout when the extension is
built there, else the installed one.
"""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))

"""Tests of ``npusim compare`` and npusim's msprobe (npusim.compare). npusim comes from
``python/`` of the checkout when the extension is built there."""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))

"""Tests of graph mode on npu (``npusim.compile``): torch.compile with the eager, aot_eager
and Inductor backends, compile reports, NPUGraph capture and replay.

As in ``tests/ops``: npusim is imported from ``python/`` of the checkout when the extension is
built there, else the installed one. Inductor compiles C++ (seconds each on a small machine),
so the compiled models here are few and small; Inductor's on-disk cache makes reruns fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

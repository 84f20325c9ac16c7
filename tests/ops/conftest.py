"""Tests of torch_npu's own operators (``torch.ops.npu`` / ``torch_npu.<name>``, C++ in ``csrc/ops``).

As in ``tests/python``: npusim is imported from ``python/`` of the checkout when the extension is
built there, else the installed one. Reference implementations live in :mod:`ops_reference`
(plain PyTorch, written from the documented math).
"""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"

if any((PYTHON_SOURCE / "npusim").glob("_C*.so")) and str(PYTHON_SOURCE) not in sys.path:
    sys.path.insert(0, str(PYTHON_SOURCE))
sys.path.insert(0, str(Path(__file__).resolve().parent))

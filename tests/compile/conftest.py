"""Tests of graph mode on npu (``npusim.compile``): torch.compile with the eager, aot_eager
and Inductor backends, compile reports, NPUGraph capture and replay.
Inductor compiles C++ (seconds each on a small machine),
so the compiled models here are few and small; Inductor's on-disk cache makes reruns fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

"""Tests of the profiler (csrc/profiler, npusim.profiler, torch_npu.profiler, the HTML report)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

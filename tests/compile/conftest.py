"""Tests of graph mode on npu (``npusim.compile``): torch.compile with the eager, aot_eager
and Inductor backends, compile reports, NPUGraph capture and replay.
Inductor compiles C++ (seconds each on a small machine),
so the compiled models here are few and small; Inductor's on-disk cache makes reruns fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture
def fresh_npu_graphs():
    """No compiled code, NPUGraph generation or graph counts left from another test."""
    from npusim.compile import npu_graph_trees

    torch._dynamo.reset()
    npu_graph_trees.reset_generations()
    npu_graph_trees.reset_stats()
    yield
    torch._dynamo.reset()
    npu_graph_trees.reset_generations()

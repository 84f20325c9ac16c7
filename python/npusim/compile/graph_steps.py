"""``torch.compiler.npugraph_mark_step_begin()``: the program says a new iteration begins.

torch_npu installs this on ``torch.compiler`` when it loads (its ``_graph_tree_state``), the
NPUGraph twin of ``torch.compiler.cudagraph_mark_step_begin()``. ``reduce-overhead`` graphs
(npusim.compile.npu_graph_trees) start a new generation on the next compiled call even when
forwards still wait for their backward, so that the outputs of the previous iteration may be
overwritten. Kept apart from the graph code so that installing it imports nothing.
"""

from __future__ import annotations

__all__ = ["MarkStepBox", "mark_step_begin", "install"]


class MarkStepBox:
    # Counts down from zero, so that a user's steps never equal one of Dynamo's generations.
    mark_step_counter = 0


def mark_step_begin() -> None:
    """Indicates that a new iteration of inference or training is about to begin."""
    MarkStepBox.mark_step_counter -= 1


def install() -> None:
    import torch

    torch.compiler.npugraph_mark_step_begin = mark_step_begin

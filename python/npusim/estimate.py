"""Estimate-only runs: the program runs with shapes but no data.

Inside ``with npusim.estimate():`` operators on ``npu`` are priced on the simulated timeline and
their outputs get the right shapes, dtypes and device memory, but nothing is computed: device
memory is accounted against the chip's capacity and never touched (the host commits none of it),
and it may exceed the capacity so that a model too big for the chip runs to the end and the report
says how much it would need. Create the model on the device inside the block (``with
torch.device("npu"):``), since a model built on the host would need host memory for its weights.

Rules where data would be needed (each warns once):

- operators whose output size depends on the data (``nonzero``, ``masked_select``, ``unique``,
  boolean-mask indexing) assume the largest outcome: every element selected, every value distinct;
- ``Tensor.item()`` returns 0, and copies to the host give zeros;
- operators without a Meta kernel in PyTorch raise an error naming the operator.

``estimate(world_size=W)`` also prices a distributed run of W ranks from this one process: the
default process group is an ``hccl`` group whose collectives are checked and priced (HCCS inside a
server of ``ranks_per_server`` NPUs, RoCE between servers) while no data moves
(:mod:`npusim.distributed._estimate`).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = ["estimate", "is_estimate_only"]


@contextlib.contextmanager
def estimate(world_size: int | None = None, ranks_per_server: int | None = None) -> Iterator[None]:
    """Run the block in estimate-only mode (nestable); with ``world_size``, as rank 0 of that many."""
    import torch

    from npusim import _C

    _C._enter_estimate_only()
    try:
        # The block's backward passes run in the calling thread, not on the npu autograd worker:
        # a worker that releases a finished graph task (which holds the block's torch function
        # modes, e.g. ``with torch.device("npu")``) while the interpreter finalizes aborts the
        # process (npusim/npu/_shutdown.py). Only inside the block: turned off for the whole
        # thread it made CPU DDP programs over Gloo abort at exit instead.
        with torch.autograd.set_multithreading_enabled(False):
            if world_size is None:
                yield
            else:
                from npusim.distributed._estimate import fake_world

                with fake_world(world_size, ranks_per_server):
                    yield
    finally:
        _C._exit_estimate_only()


def is_estimate_only() -> bool:
    """Whether estimate-only mode is on."""
    from npusim import _C

    return bool(_C._estimate_only())

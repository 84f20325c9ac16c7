"""W ranks from one process: the fake process group of estimate-only runs.

``npusim.estimate(world_size=W)`` initializes the default process group with backend ``hccl`` on
an in-process store; inside estimate-only mode the hccl backend moves no data (PyTorch's
FakeProcessGroup stands in for Gloo) but checks every call and prices it on the HCCL stream with
the collective model, for a world of W ranks with ``ranks_per_server`` NPUs per server. This
process plays rank 0; data-parallel, FSDP and tensor-parallel ranks are symmetric, so its
timeline and its device memory are every rank's.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

import torch.distributed as dist

from npusim._error_code import ErrCode, dist_error

__all__ = ["fake_world"]


@contextlib.contextmanager
def fake_world(world_size: int, ranks_per_server: int | None = None) -> Iterator[None]:
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive integer, got {world_size!r}." + dist_error(ErrCode.VALUE))
    if dist.is_initialized():
        raise RuntimeError(
            "npusim.estimate(world_size=...) creates the default process group itself, but one is already "
            "initialized; call it before init_process_group() (or without world_size)." + dist_error(ErrCode.PARAM)
        )
    saved = os.environ.get("LOCAL_WORLD_SIZE")
    if ranks_per_server is not None:
        os.environ["LOCAL_WORLD_SIZE"] = str(int(ranks_per_server))
    try:
        dist.init_process_group("hccl", store=dist.HashStore(), rank=0, world_size=world_size)
        try:
            yield
        finally:
            dist.destroy_process_group()
    finally:
        if saved is None:
            os.environ.pop("LOCAL_WORLD_SIZE", None)
        else:
            os.environ["LOCAL_WORLD_SIZE"] = saved

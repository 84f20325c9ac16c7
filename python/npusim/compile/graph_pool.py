"""The memory pool of an NPUGraph capture: the one place that decides where captured
allocations live.

On the chip (and in CUDA), ``capture_begin`` routes the capture stream's allocations to a private
pool of the caching allocator (``beginAllocateToPool``), ``capture_end`` stops routing
(``endAllocateToPool``) and ``reset`` gives the pool back (``releasePool``); replay then runs on
that memory and allocates nothing.

Until the caching allocator has private pools, npusim isolates a capture's memory by
ownership: the graph holds a reference to every tensor its captured kernels read or write (see
``NPUGraph._operations``), so no block the capture used returns to the shared pool while the
graph lives, and the blocks go back when ``reset()`` drops the references. The three hooks below
are where allocator pools plug in; they are the only functions that need to change for that.
"""

from __future__ import annotations

import itertools

_handles = itertools.count(1)


def new_pool_handle() -> tuple[int, int]:
    """A pool id as ``graph_pool_handle()`` returns it (second value set, like torch_npu)."""
    return (0, next(_handles))


def begin_allocate_to_pool(device: int, pool: tuple[int, int]) -> None:
    """Route the capture stream's allocations on ``device`` to ``pool``.

    npusim today: nothing to route; the capture keeps what it allocated (module docstring)."""


def end_allocate_to_pool(device: int, pool: tuple[int, int]) -> None:
    """Stop routing allocations to ``pool`` (the end or abort of a capture)."""


def release_pool(device: int, pool: tuple[int, int]) -> None:
    """Give ``pool``'s blocks back to the caching allocator (``NPUGraph.reset``)."""

"""The caching allocator's allocation history, as torch_npu serves it from ``torch.npu.memory``:
``_record_memory_history``, ``_snapshot``, ``_dump_snapshot`` and the flame-graph savers.

The recording lives in the C++ allocator (a ring of trace entries per device, with PyTorch's
``CapturedTraceback`` stacks taken only while recording is on); this module is its Python face.
The snapshot has the format of ``torch.cuda.memory._snapshot``, so ``torch.cuda._memory_viz`` and
pytorch.org/memory_viz read it as they read a CUDA one.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from npusim import _C
from npusim.npu._lazy import _lazy_init

__all__: list[str] = []  # private API, as in torch_npu


def _record_memory_history(enabled: str | None = "all", *args: Any, **kwargs: Any) -> None:
    r"""Enable recording of the stacks of memory allocations, and of a history of the
    allocator's actions, so that :func:`torch.npu.memory._snapshot` tells what allocated any
    piece of memory.

    Args:
        enabled (Literal[None, "state", "all"], optional): ``None`` stops recording (and forgets
            the history); ``"state"`` keeps the stacks of the memory allocated now; ``"all"``
            also keeps the history of every alloc/free. Defaults to ``"all"``.
        context (Literal[None, "state", "alloc", "all"], optional): ``None`` records no stacks;
            ``"state"`` stacks of live allocations; ``"alloc"`` also in the alloc entries of the
            history; ``"all"`` also in the free entries. Defaults to ``"all"``.
        stacks (Literal["python", "all"], optional): ``"python"`` keeps Python, TorchScript and
            inductor frames; ``"all"`` adds C++ frames. Defaults to ``"all"``.
        max_entries (int, optional): the history keeps at most the latest ``max_entries``
            entries. Defaults to ``sys.maxsize``.
        device: accepted for torch_npu's signature; every device records.
    """
    return _record_memory_history_impl(enabled, *args, **kwargs)


def _record_memory_history_impl(
    enabled: str | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
) -> None:
    _lazy_init()
    _C._npu_record_memory_history(enabled, context, stacks, max_entries)


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> dict[str, Any]:
    r"""The NPU memory state now: ``{"segments": [...], "device_traces": [[...], ...]}``.

    Each segment has ``device``, ``address``, ``total_size``, ``allocated_size``,
    ``active_size``, ``requested_size``, ``stream``, ``segment_type`` (``"small"`` /
    ``"large"``), ``segment_pool_id``, ``is_expandable``, ``frames`` and ``blocks``; each block
    ``address``, ``size``, ``requested_size``, ``state`` (``"active_allocated"``,
    ``"active_pending_free"``, ``"inactive"``) and ``frames`` (``filename``, ``line``,
    ``name`` of each frame of the allocating stack, when it was recorded).

    ``device_traces`` holds, per device, the history recorded by
    :func:`_record_memory_history`, oldest first: entries with ``action`` (``"alloc"``,
    ``"free_requested"``, ``"free_completed"``, ``"segment_alloc"``, ``"segment_free"``,
    ``"oom"``, ``"snapshot"``), ``addr`` (``device_free`` for ``"oom"``), ``size``,
    ``stream``, ``pool_id``, ``time_us`` and ``frames`` when a stack was kept. Taking a
    snapshot adds a ``"snapshot"`` entry.

    Args:
        device: accepted for torch_npu's signature; the snapshot covers every device.
        augment_with_fx_traces (bool): add the FX debug information of frames from FX-generated
            code (``torch._utils._augment_memory_snapshot_stack_traces``).
    """
    snapshot = _C._npu_memorySnapshot(None)
    if augment_with_fx_traces:
        from torch._utils import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _dump_snapshot(filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False) -> None:
    r"""Pickle :func:`_snapshot` to ``filename``, for pytorch.org/memory_viz or
    ``python -m torch.cuda._memory_viz``."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def _save_segment_usage(filename: str = "output.svg", snapshot: dict[str, Any] | None = None) -> None:
    r"""Write the flame graph of the segments' memory (``torch.cuda._memory_viz.segments``)."""
    from torch.cuda._memory_viz import segments

    _write_flame_graph(filename, snapshot, segments)


def _save_memory_usage(filename: str = "output.svg", snapshot: dict[str, Any] | None = None) -> None:
    r"""Write the flame graph of the allocated memory (``torch.cuda._memory_viz.memory``)."""
    from torch.cuda._memory_viz import memory

    _write_flame_graph(filename, snapshot, memory)


def _write_flame_graph(filename: str, snapshot: dict[str, Any] | None, render) -> None:
    with open(filename, "w") as f:
        f.write(render(_snapshot() if snapshot is None else snapshot))

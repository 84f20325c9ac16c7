"""Pinned host memory and NPUGraph capture: copies between device and pinned host memory are
captured (the graph keeps the pinned blocks it uses), pageable copies are still refused, and a
capture is refused under pin_memory_expandable_segments (torch_npu's text); the pinned allocator's
peak and accumulated statistics reset."""

import gc
import subprocess
import sys
import textwrap

import pytest
import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import subprocess_env


@torch.no_grad()
def test_pinned_copies_replay_and_the_graph_keeps_its_pinned_blocks():
    torch.npu.host_empty_cache()
    destination = torch.zeros(16, device="npu")
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        pinned = torch.full((16,), 7.0).pin_memory()
        destination.copy_(pinned, non_blocking=True)
    address = pinned.data_ptr()
    del pinned
    gc.collect()
    before = torch.npu.host_memory_stats()["allocations.current"]
    torch.npu.host_empty_cache()
    assert torch.npu.host_memory_stats()["allocations.current"] == before
    others = [torch.full((16,), -1.0).pin_memory() for _ in range(8)]
    assert address not in {t.data_ptr() for t in others}
    destination.zero_()
    graph.replay()
    assert torch.equal(destination.cpu(), torch.full((16,), 7.0))
    graph.reset()
    del graph, others
    gc.collect()
    torch.npu.host_empty_cache()
    assert torch.npu.host_memory_stats()["allocations.current"] == 0


def test_pageable_copies_are_still_refused_in_a_capture():
    destination = torch.zeros(4, device="npu")
    with pytest.raises(RuntimeError, match="between host and device is not permitted when stream is capturing"):
        with torch.npu.graph(torch.npu.NPUGraph()):
            destination.copy_(torch.ones(4))


def test_host_memory_stats_resets():
    kept = torch.ones(1024).pin_memory()
    extra = torch.ones(4096).pin_memory()
    del extra
    stats = torch.npu.host_memory_stats()
    assert stats["allocated_bytes.peak"] > stats["allocated_bytes.current"]
    torch.npu.reset_peak_host_memory_stats()
    stats = torch.npu.host_memory_stats()
    assert stats["allocated_bytes.peak"] == stats["allocated_bytes.current"]
    torch.npu.reset_accumulated_host_memory_stats()
    stats = torch.npu.host_memory_stats()
    assert stats["allocations.allocated"] == 0 and stats["allocations.freed"] == 0 and stats["num_host_alloc"] == 0
    assert stats["allocations.current"] >= 1
    del kept


def test_capture_is_refused_with_expandable_pinned_memory():
    # The checkout's npusim where its extension is built there, else the installed one.
    env = subprocess_env({"PYTORCH_NPU_ALLOC_CONF": "pin_memory_expandable_segments:True"})
    probe = textwrap.dedent(
        """
        import torch, npusim
        try:
            with torch.npu.graph(torch.npu.NPUGraph()):
                pass
        except RuntimeError as error:
            print("refused:", str(error).splitlines()[0])
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "refused: ACLGraph capture is not supported when pin_memory_expandable_segments=True." in done.stdout

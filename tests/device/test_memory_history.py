"""The allocator's allocation history through torch.npu.memory (_record_memory_history,
_snapshot, _dump_snapshot) and torch_npu._C, read by torch.cuda._memory_viz."""

import pickle

import pytest
import torch
from torch.cuda import _memory_viz

import npusim  # noqa: F401
import torch_npu

DEVICE = 5  # a device the other tests leave alone
MiB = 1024 * 1024


@pytest.fixture()
def history():
    with torch.npu.device(DEVICE):  # the other tests keep their current device
        torch.npu.empty_cache()
        yield torch.npu.memory
        torch.npu.memory._record_memory_history(None)
        torch.npu.empty_cache()


def _trace(snapshot):
    return snapshot["device_traces"][DEVICE]


def _names(frames):
    return [frame["name"] for frame in frames]


def allocate_and_free_once():
    holder = [torch.empty(3000, dtype=torch.uint8, device=f"npu:{DEVICE}")]
    address = holder[0].untyped_storage().data_ptr()
    release_it(holder)
    return address


def release_it(holder):
    holder.clear()  # the last reference: the memory is freed here


def keep_one():
    return torch.empty(5000, dtype=torch.uint8, device=f"npu:{DEVICE}")


def test_history_is_off_until_recorded(history):
    assert torch_npu._C._npu_isHistoryEnabled() is False
    history._record_memory_history(stacks="python")
    assert torch_npu._C._npu_isHistoryEnabled() is True
    history._record_memory_history(None)
    assert torch_npu._C._npu_isHistoryEnabled() is False


def test_alloc_and_free_are_traced_with_their_stacks(history):
    history._record_memory_history(stacks="python")
    address = allocate_and_free_once()
    trace = _trace(history._snapshot())
    mine = [entry for entry in trace if entry.get("addr") == address and not entry["action"].startswith("segment")]
    actions = [entry["action"] for entry in mine]
    assert actions[:3] == ["alloc", "free_requested", "free_completed"]
    alloc, free_requested, free_completed = mine[:3]
    assert alloc["size"] == 3000 and free_requested["size"] == 3000
    assert alloc["stream"] == torch.npu.current_stream(DEVICE).stream_id
    assert alloc["pool_id"] == (0, 0)
    assert alloc["time_us"] <= free_completed["time_us"]
    # Innermost frame first, as in CUDA's snapshots.
    assert _names(alloc["frames"])[0] == "allocate_and_free_once"
    assert "test_alloc_and_free_are_traced_with_their_stacks" in _names(alloc["frames"])
    # context="all": the free has its own stack.
    assert _names(free_requested["frames"])[0] == "release_it"
    assert alloc["frames"][0]["filename"] == __file__
    assert isinstance(alloc["frames"][0]["line"], int)
    assert trace[-1]["action"] == "snapshot"


def test_snapshot_blocks_carry_the_allocating_stack(history):
    history._record_memory_history(stacks="python")
    kept = keep_one()
    snapshot = history._snapshot()
    address = kept.untyped_storage().data_ptr()
    blocks = [block for segment in snapshot["segments"] for block in segment["blocks"]]
    (block,) = [block for block in blocks if block["address"] == address]
    assert block["state"] == "active_allocated" and block["requested_size"] == 5000
    assert _names(block["frames"])[0] == "keep_one"
    (segment,) = [s for s in snapshot["segments"] if s["address"] <= address < s["address"] + s["total_size"]]
    assert segment["device"] == DEVICE and segment["segment_type"] == "small"
    assert all(block["frames"] == [] for block in segment["blocks"] if block["state"] == "inactive")
    segment_allocs = [e for e in _trace(snapshot) if e["action"] == "segment_alloc" and e["addr"] == segment["address"]]
    assert segment_allocs and segment_allocs[0]["size"] == segment["total_size"]
    del kept


def test_ring_keeps_the_latest_max_entries(history):
    history._record_memory_history(stacks="python", max_entries=4)
    tensors = [torch.empty(1000 + i, dtype=torch.uint8, device=f"npu:{DEVICE}") for i in range(6)]
    trace = _trace(history._snapshot())
    assert len(trace) == 4
    assert trace[-1]["action"] == "snapshot"
    sizes = [entry["size"] for entry in trace[:-1]]
    assert sizes == [1003, 1004, 1005]  # the oldest were overwritten
    del tensors


def test_state_keeps_block_stacks_but_no_history(history):
    history._record_memory_history(enabled="state", stacks="python")
    kept = keep_one()
    allocate_and_free_once()
    snapshot = history._snapshot()
    assert [entry["action"] for entry in _trace(snapshot)] == ["snapshot"]  # a ring of one
    address = kept.untyped_storage().data_ptr()
    (block,) = [b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == address]
    assert _names(block["frames"])[0] == "keep_one"
    del kept


def test_disabling_with_none_forgets_and_stops(history):
    history._record_memory_history(stacks="python")
    allocate_and_free_once()
    history._record_memory_history(None)
    kept = keep_one()
    snapshot = history._snapshot()
    assert _trace(snapshot) == []
    address = kept.untyped_storage().data_ptr()
    (block,) = [b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == address]
    assert block["frames"] == []
    del kept


def test_context_none_records_history_without_stacks(history):
    history._record_memory_history(context=None, stacks="python")
    allocate_and_free_once()
    trace = _trace(history._snapshot())
    assert {"alloc", "free_requested", "free_completed"} <= {e["action"] for e in trace}
    assert all("frames" not in entry for entry in trace)


def test_out_of_memory_adds_an_oom_entry(history):
    history._record_memory_history(stacks="python")
    _, total = torch.npu.mem_get_info(DEVICE)
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(total * 2, dtype=torch.uint8, device=f"npu:{DEVICE}")
    oom = [entry for entry in _trace(history._snapshot()) if entry["action"] == "oom"]
    assert len(oom) == 1
    assert oom[0]["size"] >= total * 2 and "addr" not in oom[0]
    assert 0 <= oom[0]["device_free"] <= total
    assert "test_out_of_memory_adds_an_oom_entry" in _names(oom[0]["frames"])


def test_bad_options_are_refused(history):
    with pytest.raises(RuntimeError, match="expected state to be 'state', 'all', or None"):
        history._record_memory_history("everything")
    with pytest.raises(RuntimeError, match="expected context to be 'state', 'alloc', 'all', or None"):
        history._record_memory_history(context="some")
    with pytest.raises(RuntimeError, match="expected stacks to be 'python', or 'all'"):
        history._record_memory_history(stacks="cpp")
    assert torch_npu._C._npu_isHistoryEnabled() is False


def test_dump_snapshot_is_read_by_memory_viz(history, tmp_path):
    history._record_memory_history(stacks="python")
    kept = keep_one()
    allocate_and_free_once()
    path = tmp_path / "snapshot.pickle"
    history._dump_snapshot(str(path))
    with open(path, "rb") as f:
        data = pickle.load(f)
    assert set(data) == {"segments", "device_traces"}
    assert "snapshot.pickle" in _memory_viz.trace_plot(data)
    assert "snapshot.pickle" in _memory_viz.segment_plot(data)
    text = _memory_viz.trace(data)  # replays every action of the trace
    assert f"Device {DEVICE}" in text and "cudaMalloc" in text
    assert "total_allocated" in _memory_viz.segsum(data)  # parses every segment and block
    del kept

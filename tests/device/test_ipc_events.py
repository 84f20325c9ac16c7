"""torch.npu.Event(interprocess=True): ipc_handle() / from_ipc_handle() share the event's records
between processes through shared memory; nothing hangs."""

from __future__ import annotations

import pytest
import torch
from npusim_testing.fresh_process import run_python

_SCRIPT = """
import multiprocessing as mp
import torch, npusim


def importer(handle, p2c, c2p):
    import torch, npusim
    event = torch.npu.Event.from_ipc_handle(0, handle)
    c2p.put(0)              # ready
    p2c.get()               # the parent recorded
    event.synchronize()
    c2p.put(int(event.query()))
    event.record()          # a record made here is seen by the creator
    c2p.put(0)
    p2c.get(timeout=60) if hasattr(p2c, "get_nowait") else p2c.get()  # until the parent is done


if __name__ == "__main__":
    created = torch.npu.Event(enable_timing=False, interprocess=True)
    print(created.query())  # never recorded: complete
    ctx = mp.get_context("spawn")
    p2c, c2p = ctx.SimpleQueue(), ctx.SimpleQueue()
    child = ctx.Process(target=importer, args=(created.ipc_handle(), p2c, c2p))
    child.start()
    c2p.get()
    x = torch.ones(1024, device="npu") * 2
    created.record()
    p2c.put(0)
    print("importer saw the record complete:", c2p.get())
    c2p.get()
    print("records seen by the creator:", created._shared._counts())
    created.synchronize()   # the creator's own view follows its simulated timeline
    print(created.query())
    p2c.put(0)
    child.join(60)
    print("exit", child.exitcode)
"""


def test_event_shared_between_processes(tmp_path):
    result = run_python(_SCRIPT, timeout=90, script=tmp_path / "ipc_event.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True",
        "importer saw the record complete: 1",
        "records seen by the creator: (2, 2)",
        "True",
        "exit 0",
    ]


def test_handle_rules():
    # An earlier test may leave simulated work queued on the stream; the record below must be the
    # only pending work for `event.query()` to be True once the imported event synchronized.
    torch.npu.synchronize()
    with pytest.raises(RuntimeError, match="interprocess=True"):
        torch.npu.Event().ipc_handle()
    with pytest.raises(RuntimeError, match="Invalid npu event IPC handle"):
        torch.npu.Event.from_ipc_handle(0, b"not a handle")
    event = torch.npu.Event(interprocess=True)
    handle = event.ipc_handle()
    assert isinstance(handle, bytes) and len(handle) == 64 and event.ipc_handle() == handle
    opened = torch.npu.Event.from_ipc_handle(torch.device("npu:0"), handle)
    event.record()
    opened.wait()
    opened.synchronize()
    assert opened.query() and event.query()
    del event  # the creator releases the shared state
    import gc

    gc.collect()
    with pytest.raises(RuntimeError, match="no longer exists"):
        torch.npu.Event.from_ipc_handle(0, handle)


_PICKLING_SCRIPT = """
import torch, torch_npu
import torch.multiprocessing as mp


def child(q1, q2):
    with torch.npu.device("npu:0"):
        stream = torch.npu.Stream()
        with torch.npu.stream(stream):
            event = q1.get()  # unpickled from its IPC handle
            q2.put((event.device.type, event.device.index))
            event.wait()
            event.record(stream)
            q2.put("recorded")
            assert q1.get() == "done"


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q1, q2 = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=child, args=(q1, q2))
    process.start()
    with torch.npu.device("npu:0"):
        stream = torch.npu.Stream()
        event = torch.npu.Event(enable_timing=False, interprocess=True)
        event.record(stream)
        q1.put(event)
        print(q2.get(timeout=60), q2.get(timeout=60))
        event.wait()
        event.synchronize()
        print(event.query())
        q1.put("done")
    process.join(60)
    print("exit", process.exitcode)
"""


def test_interprocess_event_goes_through_a_multiprocessing_queue(tmp_path):
    result = run_python(_PICKLING_SCRIPT, timeout=120, script=tmp_path / "ipc_pickle.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["('npu', 0) recorded", "True", "exit 0"]

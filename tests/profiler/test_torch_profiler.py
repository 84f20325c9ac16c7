"""torch.profiler with the npu device (Kineto's PrivateUse1 profiler, csrc/profiler): device
kernels with their modelled durations, linked to the aten operator that launched them; memory
events; record_function ranges; with_stack; a trace that is valid Trace Event Format."""

from __future__ import annotations

import json

import pytest
import torch
import npusim  # noqa: F401
from torch.profiler import ProfilerActivity, profile, record_function

from trace_format import problems


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    x = torch.randn(64, 64, device="npu", requires_grad=True)
    w = torch.randn(64, 64, device="npu")
    # Once unprofiled first: a module imported for the first time inside a with_stack profile can
    # leave a garbage Python-function name in torch 2.13's python tracer (its code object is freed
    # after the import), which then breaks key_averages() with a UnicodeDecodeError.
    for _ in range(2):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True,
                     record_shapes=True, with_stack=True):
            (x @ w).relu().sum().backward()
            x.grad.sum().item()
        x.grad = None
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True,
                 record_shapes=True, with_stack=True) as prof:
        with record_function("my_step"):
            y = (x @ w).relu().sum()
            y.backward()
            value = y.item()  # a sync point
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        data = json.load(f)
    return prof, data, path, value


def test_npu_activity_is_offered():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()


def test_key_averages_have_device_times(profiled):
    prof = profiled[0]
    averages = {e.key: e for e in prof.key_averages()}
    mm = averages["aten::mm"]
    assert mm.device_time_total > 0
    # The matmul kernel's modelled time on the chip, not the host's time.
    kernels = [e for e in prof.events() if e.device_type == torch.device("npu").type or
               str(e.device_type).endswith("PrivateUse1") or str(e.device_type).endswith("NPU")]
    assert kernels, "no device events"
    assert any(e.name == "mm" for e in kernels)


def test_trace_is_valid_trace_event_format(profiled):
    assert problems(profiled[2]) == []


def test_kernels_on_streams_linked_to_host_ops(profiled):
    events = profiled[1]["traceEvents"]
    host = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "args" in e}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels
    for kernel in kernels:
        op = host[kernel["args"]["External id"]]
        assert op["name"].split("::")[-1].startswith(kernel["name"]) or kernel["name"] in op["name"]
        assert kernel["args"]["accelerator core"] in ("AI_CORE", "AI_CPU", "CPU_FALLBACK")
        assert kernel["dur"] == pytest.approx(kernel["args"]["simulated duration us"], abs=1e-3)
    # A stream never runs two tasks at once.
    by_stream: dict = {}
    for kernel in sorted(kernels, key=lambda e: e["ts"]):
        key = (kernel["pid"], kernel["tid"])
        assert kernel["ts"] >= by_stream.get(key, float("-inf")) - 1e-3
        by_stream[key] = kernel["ts"] + kernel["dur"]
    # Every kernel has a flow from its launch on the host.
    finishes = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "f"}
    starts = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "s"}
    assert finishes and finishes == starts


def test_memory_events(profiled):
    events = profiled[1]["traceEvents"]
    memory = [e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 20]
    assert memory
    assert any(e["args"]["Bytes"] > 0 for e in memory) and any(e["args"]["Bytes"] < 0 for e in memory)
    assert all(e["args"]["Total Allocated"] >= 0 for e in memory)


def test_record_function_and_stack(profiled):
    events = profiled[1]["traceEvents"]
    assert any(e.get("name") == "my_step" and e.get("cat") == "user_annotation" for e in events)
    assert any(e.get("cat") == "python_function" and "test_torch_profiler.py" in e.get("name", "") for e in events)


def test_sync_point_with_source_line(profiled):
    events = profiled[1]["traceEvents"]
    syncs = [e for e in events if e.get("name") == "aclrtSynchronizeStream"]
    assert any("item" in e["args"]["cause"] for e in syncs)
    assert any("test_torch_profiler.py" in e["args"]["source"] for e in syncs)


def test_no_device_events_without_the_npu_activity():
    x = torch.randn(8, 8, device="npu")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (x @ x).sum()
    assert not [e for e in prof.events() if e.name == "mm"]

"""Streams and events of torch.npu (contract §9; PrivateUse1 doc §3.7)."""

import pytest
import torch

import npusim  # noqa: F401


@pytest.fixture(autouse=True)
def restore_device_and_stream():
    device = torch.npu.current_device()
    yield
    torch.npu.set_device(device)
    torch.npu.set_stream(torch.npu.default_stream(device))


def test_stream_is_a_torch_stream():
    stream = torch.npu.Stream()
    assert isinstance(stream, torch.Stream)
    assert stream.device == torch.device("npu:0")
    assert stream.priority == 0
    assert isinstance(stream.npu_stream, int) and stream.npu_stream == stream.stream_id
    assert stream != torch.npu.default_stream()
    assert repr(stream).startswith("<torch_npu.npu.Stream device=npu:0 npu_stream=0x")


def test_high_priority_stream():
    stream = torch.npu.Stream(priority=-1)
    assert stream.priority == -1
    assert torch.npu.Stream(priority=0).priority == 0


def test_stream_on_another_device():
    stream = torch.npu.Stream(device=2)
    assert stream.device_index == 2
    assert torch.npu.current_device() == 0
    assert torch.npu.Stream(device="npu:3").device_index == 3


def test_default_and_current_stream():
    default = torch.npu.default_stream()
    assert default.stream_id == 0
    assert torch.npu.current_stream() == default
    assert torch.npu.default_stream(1).device_index == 1
    assert torch.accelerator.current_stream() == torch.npu.current_stream()


def test_set_stream_and_context():
    side = torch.npu.Stream()
    with torch.npu.stream(side):
        assert torch.npu.current_stream() == side
        x = torch.ones(8, device="npu") * 2
    assert torch.npu.current_stream() == torch.npu.default_stream()
    torch.npu.set_stream(side)
    assert torch.npu.current_stream() == side
    torch.npu.set_stream(torch.npu.default_stream())
    with torch.npu.stream(None):
        assert torch.npu.current_stream() == torch.npu.default_stream()
    assert x.sum().item() == 16


def test_stream_context_on_another_device_restores_both():
    other = torch.npu.Stream(device=3)
    with torch.npu.StreamContext(other):
        assert torch.npu.current_device() == 3
        assert torch.npu.current_stream() == other
    assert torch.npu.current_device() == 0
    assert torch.npu.current_stream(3) == torch.npu.default_stream(3)


def test_stream_synchronization():
    side = torch.npu.Stream()
    x = torch.randn(128, 128, device="npu")
    side.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(side):
        y = x @ x
    event = side.record_event()
    assert isinstance(event, torch.npu.Event)
    torch.npu.current_stream().wait_event(event)
    side.synchronize()
    assert side.query()
    assert event.query()
    assert torch.allclose(y.cpu(), x.cpu() @ x.cpu(), atol=1e-4)


def test_event_timing_is_simulated():
    x = torch.randn(256, 256, device="npu")
    start = torch.npu.Event(enable_timing=True)
    end = torch.npu.Event(enable_timing=True)
    assert repr(start) == "<torch_npu.npu.Event uninitialized>"
    start.record()
    for _ in range(4):
        x = x @ x
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert isinstance(elapsed, float) and elapsed > 0
    assert repr(start).startswith("<torch_npu.npu.Event 0x")
    # Deterministic: the same work costs the same simulated time.
    again_start, again_end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    y = torch.randn(256, 256, device="npu")
    again_start.record()
    for _ in range(4):
        y = y @ y
    again_end.record()
    again_end.synchronize()
    assert again_start.elapsed_time(again_end) == pytest.approx(elapsed)


def test_event_with_plain_torch_event():
    start = torch.npu.Event(enable_timing=True)
    plain_end = torch.Event(device="npu", enable_timing=True)
    start.record()
    torch.ones(1024, device="npu").sum()
    plain_end.record(torch.npu.current_stream())
    plain_end.synchronize()
    assert start.elapsed_time(plain_end) >= 0


def test_event_wait_and_record_on_stream():
    event = torch.npu.Event()
    side = torch.npu.Stream()
    event.record(side)
    event.wait()
    event.synchronize()
    assert event.query()


def test_external_stream():
    side = torch.npu.Stream()
    wrapped = torch.npu.ExternalStream(side.npu_stream)
    assert wrapped == side
    assert isinstance(wrapped, torch.npu.Stream)

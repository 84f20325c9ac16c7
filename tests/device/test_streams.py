"""Streams as torch_npu has them: its stream-id encoding, sync-launch streams, fail-fast
reconstruction from (stream_id, device_index, device_type), and ExternalStream."""

from __future__ import annotations

import pytest
import torch


def test_stream_ids_use_torch_npu_encoding():
    assert torch.npu.default_stream().stream_id == 0
    assert torch.npu.Stream().stream_id >> 5 == 3  # NORMAL
    assert torch.npu.Stream(priority=1).stream_id >> 5 == 3
    assert torch.npu.Stream(priority=-1).stream_id >> 5 == 4  # HIGH
    assert torch.npu.Stream(priority=-2).stream_id >> 5 == 4
    assert torch.npu.Stream(priority=-1).priority == -1


def test_sync_launch_streams():
    first = torch.npu.Stream(is_sync_launch=True)
    assert first.stream_id >> 5 == 2 and first.is_sync_launch
    assert not torch.npu.Stream().is_sync_launch and not torch.npu.default_stream().is_sync_launch
    pool = {torch.npu.SyncLaunchStream().stream_id for _ in range(8)}
    assert len(pool) == 4  # four per device, round-robin
    stream = torch.npu.SyncLaunchStream()
    assert isinstance(stream, torch.npu.SyncLaunchStream) and repr(stream).startswith("<torch_npu.npu.SyncLaunchStream")
    with torch.npu.stream(stream):
        assert (torch.ones(3, device="npu") * 2).sum().item() == 6.0
    stream.synchronize()


@pytest.mark.parametrize(
    "stream_id,device_index,device_type,message",
    [
        (99999, 0, 20, "Unrecognized stream 99999"),
        (0, 999, 20, r"Invalid device_index : 999, valid device_index range is \[0, 8\)"),
        (0, 0, 999, "Invalid device_type : 999"),
        (0, -1, 20, "Invalid device_index : -1"),
        (-1, 0, 20, "Unrecognized stream -1"),
        (1, 0, 20, "Unrecognized stream 1"),
    ],
)
def test_reconstruction_fails_fast(stream_id, device_index, device_type, message):
    with pytest.raises(RuntimeError, match=message):
        torch.npu.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def test_sync_launch_index_out_of_bounds_fails_fast():
    stream = torch.npu.Stream(is_sync_launch=True)
    with pytest.raises(RuntimeError, match="Unrecognized stream"):
        torch.npu.Stream(stream_id=stream.stream_id + 4, device_index=stream.device_index, device_type=stream.device_type)


@pytest.mark.parametrize("make", [torch.npu.Stream, torch.npu.default_stream, lambda: torch.npu.Stream(is_sync_launch=True)])
def test_valid_reconstruction(make):
    original = make()
    copy = torch.npu.Stream(stream_id=original.stream_id, device_index=original.device_index, device_type=original.device_type)
    assert (copy.stream_id, copy.device_index, copy.device_type) == (original.stream_id, original.device_index, original.device_type)
    copy.synchronize()


def test_external_stream():
    handle = torch.npu.Stream().npu_stream
    external = torch.npu.ExternalStream(handle)
    assert isinstance(external, torch.npu.Stream) and external.npu_stream == handle
    assert external.device.index == torch.npu.current_device()
    assert torch.npu.ExternalStream(handle) == external
    with torch.npu.stream(external):
        assert torch.npu.current_stream().npu_stream == handle
        x = torch.randn(10, device="npu")
        y = x + 1
    torch.npu.synchronize()
    assert torch.allclose(y.cpu(), x.cpu() + 1)
    with pytest.raises(RuntimeError, match="NPUStream::synchronize"):
        external.synchronize()
    with pytest.raises(RuntimeError, match="Cannot query"):
        external.query()

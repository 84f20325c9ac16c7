"""Dynamo on npu tensors: the device interface, and the eager / aot_eager backends."""

import pytest
import torch

import npusim  # noqa: F401


def _step(x, w):
    return ((x @ w).sin() * 2).relu().sum()


def test_device_interface_is_registered_and_maps_to_torch_npu():
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device("npu")
    assert get_interface_for_device(torch.device("npu:0")) is interface
    assert interface.current_device() == torch.npu.current_device()
    assert interface.device_count() == torch.npu.device_count()
    assert interface.is_available()
    assert interface.Stream is torch.npu.Stream and interface.Event is torch.npu.Event
    assert interface.get_raw_stream(0) == torch.npu.current_stream(0).stream_id
    assert interface.exchange_device(0) == torch.npu.current_device()
    interface.synchronize()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_forward_and_backward_equal_eager(backend):
    torch._dynamo.reset()
    torch.manual_seed(0)
    x = torch.randn(16, 16, device="npu", requires_grad=True)
    w = torch.randn(16, 16, device="npu", requires_grad=True)
    expected = _step(x, w)
    expected.backward()
    grads = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    result = torch.compile(_step, backend=backend)(x, w)
    result.backward()
    assert result.device.type == "npu"
    torch.testing.assert_close(result.cpu(), expected.cpu())
    torch.testing.assert_close(x.grad.cpu(), grads[0].cpu())
    torch.testing.assert_close(w.grad.cpu(), grads[1].cpu())


def test_streams_and_events_inside_a_compiled_region():
    torch._dynamo.reset()
    side = torch.npu.Stream()

    def region(x):
        start = torch.npu.Event(enable_timing=True)
        start.record()
        with torch.npu.stream(side):
            y = x * 2
        torch.npu.current_stream().wait_stream(side)
        return y + 1

    x = torch.arange(8.0, device="npu")
    out = torch.compile(region, backend="eager")(x)
    torch.testing.assert_close(out.cpu(), torch.arange(8.0) * 2 + 1)

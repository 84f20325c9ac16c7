"""nn.LSTM, nn.GRU and their cells train on npu (ATen calls fused cell kernels for accelerators,
which npusim provides) and agree with CPU to rounding (the fused cells add the gates in another
order than the CPU's unfused cells)."""

import pytest
import torch

import npusim  # noqa: F401


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=["LSTM", "GRU"])
@pytest.mark.parametrize("bias", [True, False])
def test_recurrent_layers_match_cpu(cls, bias):
    torch.manual_seed(0)
    model = cls(8, 16, num_layers=2, batch_first=True, bias=bias)
    x = torch.randn(3, 5, 8, requires_grad=True)
    out, _ = model(x)
    out.square().sum().backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    expected_out, expected_x_grad = out.detach(), x.grad.clone()

    model.zero_grad()
    model = model.npu()
    x_npu = x.detach().npu().requires_grad_()
    out_npu, _ = model(x_npu)
    out_npu.square().sum().backward()
    torch.testing.assert_close(out_npu.cpu(), expected_out, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x_npu.grad.cpu(), expected_x_grad, rtol=1e-5, atol=1e-6)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad.cpu(), expected[name], rtol=1e-5, atol=1e-5)


def test_cells_run_on_npu():
    lstm = torch.nn.LSTMCell(4, 6).npu()
    h, c = lstm(torch.randn(2, 4, device="npu"))
    assert h.shape == c.shape == (2, 6) and h.device.type == "npu"
    gru = torch.nn.GRUCell(4, 6).npu()
    assert gru(torch.randn(2, 4, device="npu")).shape == (2, 6)

"""nn.LSTM, nn.GRU and their cells train on npu. Whole layers run as torch_npu runs them (one
npu_lstm / npu_gru kernel per layer on the timeline) with the CPU's own numbers; the cells (ATen
calls fused cell kernels for accelerators, which npusim provides) agree with CPU to rounding (the
fused cells add the gates in another order than the CPU's unfused cells)."""

import copy

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


def _cpu_and_npu(model, x, hidden=None):
    """Forward and backward of `model` on cpu and on npu from the same weights and input."""
    results = {}
    for device in ("cpu", "npu"):
        m = copy.deepcopy(model).to(device)
        xi = x.detach().to(device).requires_grad_()
        h = None if hidden is None else tuple(t.to(device) for t in hidden) if isinstance(hidden, tuple) else hidden.to(device)
        out, state = m(xi) if h is None else m(xi, h)
        loss = out.square().sum() + sum(s.sum() for s in (state if isinstance(state, tuple) else (state,)))
        loss.backward()
        results[device] = (out, state, xi.grad, {n: p.grad for n, p in m.named_parameters()})
    return results


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True),
        lambda: torch.nn.LSTM(8, 16, batch_first=True, proj_size=4),
        lambda: torch.nn.GRU(8, 16, num_layers=3, bidirectional=True, batch_first=True),
        lambda: torch.nn.LSTM(8, 16, num_layers=2, dropout=0.5).eval(),
    ],
    ids=["lstm-bidirectional", "lstm-projections", "gru-bidirectional", "lstm-dropout-eval"],
)
def test_whole_layers_equal_the_cpu_bit_for_bit(make):
    # nn.LSTM / nn.GRU run as the CPU's own implementation on the device memory (torch_npu's
    # npu_lstm / npu_gru per layer on the timeline): every result and gradient is the CPU's.
    torch.manual_seed(0)
    model = make()
    x = torch.randn(5, 3, 8)
    results = _cpu_and_npu(model, x)
    cpu, npu = results["cpu"], results["npu"]
    assert torch.equal(npu[0].cpu(), cpu[0])
    states = zip(npu[1], cpu[1]) if isinstance(cpu[1], tuple) else [(npu[1], cpu[1])]
    assert all(torch.equal(n.cpu(), c) for n, c in states)
    assert torch.equal(npu[2].cpu(), cpu[2])
    for name, grad in cpu[3].items():
        assert torch.equal(npu[3][name].cpu(), grad), name


def test_given_initial_state_and_inference_mode():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(4, 6)
    x, h0, c0 = torch.randn(3, 2, 4), torch.randn(1, 2, 6), torch.randn(1, 2, 6)
    expected, (h, c) = lstm(x, (h0, c0))
    npu_lstm = copy.deepcopy(lstm).npu()
    with torch.inference_mode():
        out, (hn, cn) = npu_lstm(x.npu(), (h0.npu(), c0.npu()))
    assert torch.equal(out.cpu(), expected.detach()) and torch.equal(hn.cpu(), h.detach())
    assert not out.requires_grad


def test_backward_twice_with_retained_graph_and_in_place_change_refused():
    torch.manual_seed(0)
    gru = torch.nn.GRU(4, 6).npu()
    out, _ = gru(torch.randn(3, 2, 4, device="npu"))
    out.sum().backward(retain_graph=True)
    first = gru.weight_hh_l0.grad.clone()
    out.sum().backward()
    torch.testing.assert_close(gru.weight_hh_l0.grad.cpu(), 2 * first.cpu())

    out, _ = gru(torch.randn(3, 2, 4, device="npu"))
    out.mul_(2)  # the kernel's saved result changed in place: autograd refuses, as for any saved tensor
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_training_dropout_between_layers_uses_the_per_step_kernels():
    # Dropout between layers draws from the npu generator: these calls keep ATen's per-step path.
    npusim.reset_placement_report()
    lstm = torch.nn.LSTM(4, 6, num_layers=2, dropout=0.5).npu()
    out, _ = lstm(torch.randn(3, 2, 4, device="npu"))
    out.sum().backward()
    counts = npusim.placement_report()["operators"]
    assert "aten::_thnn_fused_lstm_cell" in counts and "npu::npu_lstm" not in counts

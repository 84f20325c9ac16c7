"""What in-place operators and fused optimizers are charged: a written argument is read too unless
the operator only writes it; tensor lists are priced element by element (estimate-only mode)."""

import pytest
import torch

import npusim
from perf_timing import device_us, estimate_on_npu


@pytest.fixture
def estimate():
    with estimate_on_npu():
        yield


def test_in_place_operators_read_what_they_write(estimate):
    x = torch.empty(64 * 2**20)
    y = torch.empty(64 * 2**20)
    assert device_us(lambda: x.mul_(2)) == pytest.approx(device_us(lambda: x * 2), rel=0.01)
    assert device_us(lambda: x.add_(y)) == pytest.approx(device_us(lambda: x + y), rel=0.01)
    assert device_us(lambda: x.relu_()) == pytest.approx(device_us(lambda: torch.relu(x)), rel=0.01)


def test_write_only_operators_do_not_read_their_destination(estimate):
    x = torch.empty(64 * 2**20)
    y = torch.empty(64 * 2**20)
    out = torch.empty(64 * 2**20)
    fill = device_us(lambda: x.fill_(1))
    copy = device_us(lambda: x.copy_(y))
    # fill_ writes 256 MiB, copy_ reads and writes it: about twice the time.
    assert copy == pytest.approx(2 * fill, rel=0.1)
    assert device_us(lambda: x.zero_()) == pytest.approx(fill, rel=0.05)
    assert device_us(lambda: x.uniform_()) < copy
    # add(out=) reads two operands and writes out: as add, not as an in-place read of out.
    assert device_us(lambda: torch.add(x, y, out=out)) == pytest.approx(device_us(lambda: x + y), rel=0.01)


def _params(count: int, numel: int):
    params = [torch.nn.Parameter(torch.empty(numel)) for _ in range(count)]
    for p in params:
        p.grad = torch.empty(numel)
    return params


@pytest.mark.parametrize("make", [
    lambda p: torch.optim.AdamW(p, fused=True),
    lambda p: torch.optim.Adam(p, fused=True),
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, fused=True),
])
def test_fused_optimizers_scale_with_their_tensor_lists(estimate, make):
    small = make(_params(4, 2**20))
    large = make(_params(4, 16 * 2**20))
    small.step(), large.step()  # the first step creates the states
    t_small, t_large = device_us(small.step), device_us(large.step)
    assert t_large > 10 * t_small  # 16x the elements: memory-bound, not the kernel floor


def test_fused_adamw_moves_its_state_once(estimate):
    # 64 Mi fp32 parameters: reads param, grad, exp_avg, exp_avg_sq (16 B), writes param and the
    # two moments (12 B): 28 B per parameter through HBM.
    optimizer = torch.optim.AdamW(_params(4, 16 * 2**20), fused=True)
    optimizer.step()
    us = device_us(optimizer.step)
    hbm = 1.6e12 * 0.85
    expected = 28 * 64 * 2**20 / hbm * 1e6
    assert us == pytest.approx(expected, rel=0.1)


def test_sgd_fused_runs_in_estimate_mode(estimate):
    params = _params(3, 1024)
    for momentum in (0.0, 0.9):
        optimizer = torch.optim.SGD(params, lr=0.1, momentum=momentum, fused=True)
        optimizer.step()
        optimizer.step()


def test_rms_norm_runs_as_its_decomposition_as_on_torch_npu_2_13(estimate):
    # aten::rms_norm is CompositeImplicitAutograd and torch_npu 2.13 registers no NPU kernel for it
    # or for aten::_fused_rms_norm (op-plugin's op_plugin_functions.yaml lists neither; only the
    # custom torch_npu.npu_rms_norm is one fused kernel): F.rms_norm launches its decomposition.
    x = torch.empty(8, 1024, 1024, requires_grad=True)
    w = torch.empty(1024, requires_grad=True)
    npusim.reset_placement_report()
    torch.nn.functional.rms_norm(x, (1024,), w, 1e-5)
    operators = npusim.placement_report()["operators"]
    assert "aten::_fused_rms_norm" not in operators
    assert {"aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::rsqrt"} <= set(operators)

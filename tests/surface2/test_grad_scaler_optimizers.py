"""torch.npu.amp.GradScaler with several optimizers: an overflow in any optimizer's gradients
skips every step() of the iteration, as torch_npu's scaler does (its ``_has_overflow``)."""

from __future__ import annotations

import torch


def _models():
    torch.manual_seed(0)
    first = torch.nn.Linear(4, 4).npu()
    second = torch.nn.Linear(4, 4).npu()
    return first, second, torch.optim.SGD(first.parameters(), lr=0.1), torch.optim.SGD(second.parameters(), lr=0.1)


def _backward(scaler, first, second, poison_first: bool, poison_second: bool = False):
    x = torch.randn(2, 4, device="npu")
    scaler.scale(first(x).sum() + second(x).sum()).backward()
    if poison_first:
        first.weight.grad[0, 0] = float("inf")
    if poison_second:
        second.weight.grad[0, 0] = float("nan")


def test_overflow_in_first_optimizer_skips_the_second(capsys):
    first, second, opt1, opt2 = _models()
    scaler = torch.npu.amp.GradScaler(init_scale=1024.0)
    before = [p.detach().cpu().clone() for p in (*first.parameters(), *second.parameters())]
    _backward(scaler, first, second, poison_first=True)
    scaler.step(opt1)
    scaler.step(opt2)
    scaler.update()
    after = [p.detach().cpu() for p in (*first.parameters(), *second.parameters())]
    assert all(torch.equal(a, b) for a, b in zip(before, after))  # neither model moved
    assert scaler.get_scale() == 512.0  # one backoff for the iteration
    assert capsys.readouterr().out.count("Gradient overflow. Skipping step") == 2


def test_next_iteration_steps_again():
    first, second, opt1, opt2 = _models()
    scaler = torch.npu.amp.GradScaler(init_scale=1024.0)
    _backward(scaler, first, second, poison_first=True)
    scaler.step(opt1)
    scaler.step(opt2)
    scaler.update()
    for opt in (opt1, opt2):
        opt.zero_grad()
    before = second.weight.detach().cpu().clone()
    _backward(scaler, first, second, poison_first=False)
    scaler.step(opt1)
    scaler.step(opt2)
    scaler.update()
    assert not torch.equal(before, second.weight.detach().cpu())
    assert scaler.get_scale() == 512.0


def test_unscale_then_step_with_overflow_in_the_second():
    # Both optimizers unscaled before stepping: the overflow of the second is known before the
    # first steps, so neither steps.
    first, second, opt1, opt2 = _models()
    scaler = torch.npu.amp.GradScaler(init_scale=1024.0)
    before = first.weight.detach().cpu().clone()
    _backward(scaler, first, second, poison_first=False, poison_second=True)
    scaler.unscale_(opt1)
    scaler.unscale_(opt2)
    scaler.step(opt1)
    scaler.step(opt2)
    scaler.update()
    assert torch.equal(before, first.weight.detach().cpu())

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


def test_scaler_errors_carry_torch_npu_codes():
    import pytest

    model = torch.nn.Linear(2, 2).npu().half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.npu.amp.GradScaler()
    scaler.scale(model(torch.randn(1, 2, device="npu").half()).sum()).backward()
    with pytest.raises(TypeError, match=r"Attempting to unscale FP16 gradients\.\n.*ERR00002 PTA invalid type"):
        scaler.step(optimizer)
    first, second, opt1, _ = _models()
    scaler = torch.npu.amp.GradScaler()
    _backward(scaler, first, second, poison_first=False)
    scaler.unscale_(opt1)
    with pytest.raises(RuntimeError, match=r"since the last update\(\)\.\n.*ERR00005 PTA internal error"):
        scaler.unscale_(opt1)
    scaler.step(opt1)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called.*\n.*ERR00005"):
        scaler.step(opt1)
    with pytest.raises(TypeError, match=r"new_scale should be a float.*\n.*ERR00002"):
        scaler.update(new_scale=3)
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0

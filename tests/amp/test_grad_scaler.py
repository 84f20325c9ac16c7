"""Loss scaling on npu: torch.amp.GradScaler("npu"), torch.npu.amp.GradScaler and
torch_npu.npu.amp.GradScaler, against the same training on CPU.

Tolerances. Every npu operator runs PyTorch's CPU kernel, so a run on npu equals the same run on
CPU bit for bit whenever both autocasts take the same path through the model. They do for
Linear/ReLU/MSE (the two lists agree on every operator used): that training is compared exactly,
overflow, skipped step and backoff included. They do not where npu's list (torch_npu's) and CPU's
list differ, e.g. cross_entropy (CPU autocast casts the whole cross_entropy_loss to float32; npu
autocast casts at log_softmax(dtype=float32) and nll_loss, so the float16 logits reach float32 by
another route) and layer_norm (float32 on npu, the autocast dtype on CPU): there losses and
parameters agree within 8 units of roundoff of the autocast dtype, i.e. 7.8e-3 for float16 and
6.3e-2 for bfloat16 (measured over 14 steps: float16 1.1e-4 on the loss and 6.3e-4 relative on
the parameters; bfloat16 5.7e-4 and 9.6e-3), and the loss-scale sequence and the skipped steps are
identical.
"""

from __future__ import annotations

import io

import pytest
import torch

import npusim  # noqa: F401
from amp_subprocess import run_python

LOW_DTYPES = [torch.float16, torch.bfloat16]
LOW_IDS = ["float16", "bfloat16"]


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    )


def _normalized_mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32),
        torch.nn.LayerNorm(32),
        torch.nn.GELU(),
        torch.nn.Linear(32, 32),
        torch.nn.Tanh(),
        torch.nn.Linear(32, 4),
    )


def _train(device, low, *, build, loss_name, steps=14, overflow_at=(), scaler_factory=None):
    torch.manual_seed(0)
    model = build().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = (scaler_factory or (lambda: torch.amp.GradScaler(device, growth_interval=4)))()
    data = torch.Generator().manual_seed(1)
    losses, scales, skipped = [], [], []
    for step in range(steps):
        x = torch.randn(64, 16, generator=data).to(device)
        y = torch.randint(0, 4, (64,), generator=data).to(device)
        optimizer.zero_grad()
        with torch.autocast(device, dtype=low):
            out = model(x)
            if loss_name == "mse":
                loss = torch.nn.functional.mse_loss(out, torch.nn.functional.one_hot(y, 4).float())
            else:
                loss = torch.nn.functional.cross_entropy(out, y)
        scaler.scale(loss).backward()
        if step in overflow_at:
            model[0].weight.grad[0, 0] = float("inf") if step % 2 else float("nan")
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(optimizer)
        scaler.update()
        skipped.append(all(torch.equal(b, p) for b, p in zip(before, model.parameters())))
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, scales, skipped, [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("low", LOW_DTYPES, ids=LOW_IDS)
def test_training_equals_cpu_autocast_exactly(low):
    cpu = _train("cpu", low, build=_mlp, loss_name="mse", overflow_at=(5, 10))
    npu = _train("npu", low, build=_mlp, loss_name="mse", overflow_at=(5, 10))
    assert npu[0] == cpu[0]  # losses
    assert npu[1] == cpu[1]  # scales
    assert npu[2] == cpu[2]  # skipped steps
    # The weights match to the last bits, not bit for bit: a 16-bit product on npu is the fp32 product rounded
    # once, as the chip computes it, while the CPU's 16-bit GEMM sums in its own blocking, which depends on the
    # host's instruction set (on an AVX-512 host without FP16 a few gradient elements round the other way).
    for a, b in zip(npu[3], cpu[3]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # The forced overflows (Inf at step 5, NaN at step 10) skipped their steps and halved the
    # scale; four clean steps in a row doubled it.
    assert npu[2][5] and npu[2][10] and not any(npu[2][:5])
    assert npu[1][:6] == [65536.0, 65536.0, 65536.0, 131072.0, 131072.0, 65536.0]


@pytest.mark.parametrize("low", LOW_DTYPES, ids=LOW_IDS)
def test_training_close_to_cpu_where_the_lists_differ(low):
    cpu = _train("cpu", low, build=_normalized_mlp, loss_name="cross_entropy", overflow_at=(6,))
    npu = _train("npu", low, build=_normalized_mlp, loss_name="cross_entropy", overflow_at=(6,))
    tolerance = 8 * torch.finfo(low).eps
    assert max(abs(a - b) for a, b in zip(npu[0], cpu[0])) <= tolerance
    assert npu[1] == cpu[1] and npu[2] == cpu[2]
    for a, b in zip(npu[3], cpu[3]):
        assert (a - b).abs().max() <= tolerance * b.abs().max()


SCALERS = {
    "torch.amp.GradScaler": lambda **kw: torch.amp.GradScaler("npu", **kw),
    "torch.npu.amp.GradScaler": lambda **kw: torch.npu.amp.GradScaler(**kw),
    "torch_npu.npu.amp.GradScaler": lambda **kw: __import__("torch_npu").npu.amp.GradScaler(**kw),
}


def _one_step(scaler, value=None, lr=0.1):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    x = torch.randn(8, 4).npu()
    with torch.autocast("npu"):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    if value is not None:
        model.bias.grad[1] = value
    before = [p.detach().clone() for p in model.parameters()]
    scaler.step(optimizer)
    scaler.update()
    stepped = not all(torch.equal(b, p) for b, p in zip(before, model.parameters()))
    return model, optimizer, stepped


@pytest.mark.parametrize("name", SCALERS)
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
def test_forced_overflow_skips_the_step_and_backs_off(name, value, capsys):
    scaler = SCALERS[name](init_scale=1024.0, growth_interval=1)
    _, optimizer, stepped = _one_step(scaler, value)
    assert not stepped
    assert optimizer.state_dict()["state"] == {}  # momentum buffers never created
    assert scaler.get_scale() == 512.0
    assert scaler._get_growth_tracker() == 0
    if name != "torch.amp.GradScaler":
        assert capsys.readouterr().out.splitlines() == [
            "Gradient overflow. Skipping step",
            "Loss scaler reducing loss scale to 512.0",
        ]
    # The next clean step is taken and, with growth_interval=1, grows the scale again.
    _, _, stepped = _one_step(scaler)
    assert stepped and scaler.get_scale() == 1024.0
    if name != "torch.amp.GradScaler":
        assert capsys.readouterr().out.splitlines() == ["Loss scaler increasing loss scale to 1024.0"]


@pytest.mark.parametrize("name", SCALERS)
def test_growth_after_the_interval(name):
    scaler = SCALERS[name](init_scale=8.0, growth_factor=4.0, growth_interval=3)
    scales = []
    for _ in range(7):
        _one_step(scaler)
        scales.append(scaler.get_scale())
    assert scales == [8.0, 8.0, 32.0, 32.0, 32.0, 128.0, 128.0]


def test_scale_and_unscale_values():
    scaler = torch.npu.amp.GradScaler(init_scale=256.0)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4).npu()
    loss = model(x).pow(2).mean()
    scaled = scaler.scale(loss)
    assert scaled.device.type == "npu" and scaled.item() == pytest.approx(loss.item() * 256.0)
    scaled.backward()
    expected = [p.grad.cpu() / 256.0 for p in model.parameters()]
    scaler.unscale_(optimizer)
    assert all(torch.equal(p.grad.cpu(), e) for p, e in zip(model.parameters(), expected))
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    scaler.step(optimizer)
    scaler.update()
    assert scaler.scale([loss, loss])[1].item() == pytest.approx(loss.item() * 256.0)


@pytest.mark.parametrize("name", SCALERS)
def test_state_dict_round_trip(name):
    scaler = SCALERS[name](init_scale=4096.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
    _one_step(scaler, float("inf"))
    _one_step(scaler)
    _one_step(scaler)
    state = scaler.state_dict()
    assert state["scale"] == 1024.0 and state["_growth_tracker"] == 2
    assert state["growth_factor"] == 3.0 and state["backoff_factor"] == 0.25 and state["growth_interval"] == 5
    if name != "torch.amp.GradScaler":
        assert state["dynamic"] is True
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    restored = SCALERS[name]()
    restored.load_state_dict(torch.load(buffer))
    assert restored.state_dict() == state
    # The restored scaler continues where the first one was: three more clean steps grow it.
    for _ in range(3):
        _one_step(restored)
    assert restored.get_scale() == 3072.0 and restored._get_growth_tracker() == 0
    # States move between the device-generic scaler, the npu one and the CPU one.
    cpu = torch.amp.GradScaler("cpu")
    cpu.load_state_dict(state)
    assert cpu.get_scale() == 1024.0


def test_pickling_between_iterations():
    import pickle

    scaler = torch.npu.amp.GradScaler(init_scale=64.0)
    _one_step(scaler)
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.get_scale() == 64.0 and copy._get_growth_tracker() == 1 and copy._dynamic


def test_static_loss_scale():
    scaler = torch.npu.amp.GradScaler(init_scale=128.0, dynamic=False, growth_interval=1)
    for _ in range(3):
        _, _, stepped = _one_step(scaler)
        assert stepped
    assert scaler.get_scale() == 128.0
    # torch_npu's static scale checks nothing: an overflow goes into the step.
    model, _, stepped = _one_step(scaler, float("inf"))
    assert stepped and not torch.isfinite(model.bias).all()
    assert scaler.get_scale() == 128.0
    assert scaler.state_dict()["dynamic"] is False


def test_disabled_scaler_is_transparent():
    scaler = torch.npu.amp.GradScaler(enabled=False)
    loss = torch.ones((), device="npu")
    assert scaler.scale(loss) is loss
    _, _, stepped = _one_step(scaler)
    assert stepped and scaler.state_dict() == {} and not scaler.is_enabled()


def test_bad_factors_are_refused_with_torch_npus_error():
    with pytest.raises(ValueError, match="The growth factor must be > 1.0.[\\s\\S]*ERR00003 PTA invalid value"):
        torch.npu.amp.GradScaler(growth_factor=1.0)
    with pytest.raises(ValueError, match="The backoff factor must be < 1.0."):
        torch.npu.amp.GradScaler(backoff_factor=1.5)


# -- the two _amp kernels --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bad", [None, float("inf"), float("nan")], ids=["finite", "inf", "nan"])
def test_non_finite_check_and_unscale_equals_cpu(dtype, bad):
    torch.manual_seed(0)
    grads = [torch.randn(5).to(dtype) * 1000, torch.randn(3, 4).to(dtype) * 1000]
    if bad is not None:
        grads[1][2, 1] = bad
    results = {}
    for device in ("cpu", "npu"):
        moved = [g.to(device) for g in grads]
        found_inf = torch.zeros((), device=device)
        inv_scale = torch.full((), 1 / 1024, device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(moved, found_inf, inv_scale)
        results[device] = ([g.cpu() for g in moved], found_inf.item())
    assert results["npu"][1] == results["cpu"][1] == (0.0 if bad is None else 1.0)
    for a, b in zip(results["npu"][0], results["cpu"][0]):
        assert torch.equal(a, b) or (torch.isnan(a) == torch.isnan(b)).all()


@pytest.mark.parametrize("found", [0.0, 1.0])
def test_update_scale_equals_cpu(found):
    results = {}
    for device in ("cpu", "npu"):
        scale = torch.full((), 1024.0, device=device)
        tracker = torch.full((), 2, dtype=torch.int32, device=device)
        torch._amp_update_scale_(scale, tracker, torch.full((), found, device=device), 2.0, 0.5, 3)
        results[device] = (scale.item(), tracker.item())
    assert results["npu"] == results["cpu"] == ((2048.0, 0) if found == 0.0 else (512.0, 0))


def test_non_finite_check_warns_once_as_torch_npu():
    result = run_python(
        """
        import warnings
        import torch, npusim
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                torch._amp_foreach_non_finite_check_and_unscale_(
                    [torch.ones(2, device="npu")], torch.zeros((), device="npu"), torch.ones((), device="npu"))
        # PyTorch appends "(Triggered internally at <file>:<line>.)", as it does to torch_npu's.
        print([str(w.message).split(" (Triggered")[0] for w in caught if "Non finite" in str(w.message)])
        try:
            torch._amp_foreach_non_finite_check_and_unscale_(
                [torch.ones(2, device="npu")], torch.zeros((), device="npu"), torch.ones(2, device="npu"))
        except RuntimeError as error:
            print(str(error).splitlines()[0], "ERR01001 OPS invalid parameter" in str(error))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['Non finite check and unscale on NPU device!']",
        "inv_scale must be a 1-element tensor True",
    ]
    silenced = run_python(
        """
        import warnings
        import torch, npusim
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch._amp_foreach_non_finite_check_and_unscale_(
                [torch.ones(2, device="npu")], torch.zeros((), device="npu"), torch.ones((), device="npu"))
        print([str(w.message) for w in caught if "Non finite" in str(w.message)])
        """,
        {"TORCH_NPU_WARNING_DISABLE": "1"},
    )
    assert silenced.returncode == 0, silenced.stderr
    assert silenced.stdout.splitlines() == ["[]"]

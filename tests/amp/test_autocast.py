"""Autocast on npu: torch_npu's cast policies on the AutocastPrivateUse1 key, and the autocast API
of torch.npu / torch_npu.npu."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import npusim  # noqa: F401
from autocast_policies import CUDA_ONLY, LOWER, POLICIES, PROMOTE, REFUSED, expected_dtype
from amp_subprocess import run_python

LOW_DTYPES = [torch.float16, torch.bfloat16]

# lstm_cell and gru_cell reach _thnn_fused_*_cell on npu (ATen picks the fused kernels for
# PrivateUse1 tensors), which has no CPU kernel for the executor to run; their policy is checked
# where the fused kernel is called.
NEEDS_FUSED_CELL = {"lstm_cell.default", "gru_cell.default"}
INTERCEPTED = CUDA_ONLY | NEEDS_FUSED_CELL


def make(shape, dtype):
    return (torch.rand(shape) * 0.8 + 0.1).to(dtype).to("npu")


def _aten_name(overload: str) -> str:
    name, _, overload_name = overload.partition(".")
    return f"aten::{name}" if overload_name == "default" else f"aten::{name}.{overload_name}"


class StopKernelsWithoutCpuCode(TorchDispatchMode):
    """Stops the CUDA-only kernels after autocast has cast their inputs: records the dtypes of
    their floating-point tensor arguments and returns empty results of the first one's dtype."""

    STOPPED = {
        "aten::cudnn_convolution",
        "aten::cudnn_convolution_transpose",
        "aten::_thnn_fused_lstm_cell",
        "aten::_thnn_fused_gru_cell",
        "aten::_scaled_dot_product_flash_attention",
    }

    def __init__(self):
        super().__init__()
        self.seen: dict[str, list[torch.dtype]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name not in self.STOPPED:
            return func(*args, **kwargs)
        tensors = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        floating = [t for t in tensors if t.is_floating_point()]
        self.seen[name] = [t.dtype for t in floating]
        first = floating[0]
        like = dict(dtype=first.dtype, device=first.device)
        if name in ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose"):
            return torch.empty((1, 3, 3, 3), **like)
        if name == "aten::_thnn_fused_lstm_cell":
            hidden = args[2].shape
            return torch.empty(hidden, **like), torch.empty(hidden, **like), torch.empty(args[0].shape, **like)
        if name == "aten::_thnn_fused_gru_cell":
            return torch.empty(args[2].shape, **like), torch.empty((args[2].shape[0], 5 * args[2].shape[1]), **like)
        q = args[0]
        batch, heads, length, _ = q.shape
        return (
            torch.empty(q.shape, **like),
            torch.empty((batch, heads, length), dtype=torch.float32, device=q.device),
            torch.empty(0, device=q.device),
            torch.empty(0, device=q.device),
            length,
            length,
            torch.empty(2, dtype=torch.int64, device=q.device),
            torch.empty(0, device=q.device),
            torch.empty(0, device=q.device),
        )


def _first_tensor(out) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


# -- the lists -----------------------------------------------------------------------------


def test_registered_operators_are_torch_npus_lists():
    registered = {
        name
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastPrivateUse1")
    }
    expected = {_aten_name(op) for op in POLICIES} | {_aten_name(op) for op in REFUSED}
    assert registered == expected
    assert len(POLICIES) == 103


@pytest.mark.parametrize("low", LOW_DTYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("op", sorted(POLICIES))
def test_cast_policy(op, low):
    policy, case = POLICIES[op]
    expected = expected_dtype(policy, low)
    if op in INTERCEPTED:
        mode = StopKernelsWithoutCpuCode()
        with torch.autocast("npu", dtype=low), mode:
            out = case(make, low)
        (stopped,) = mode.seen.values()
        assert stopped and all(dtype == expected for dtype in stopped), stopped
    else:
        with torch.autocast("npu", dtype=low):
            out = case(make, low)
    result = _first_tensor(out)
    assert result.device.type == "npu"
    assert result.dtype == expected
    if op in INTERCEPTED or policy == PROMOTE:
        return
    # Without autocast the same call keeps its inputs' dtype (or has no kernel for it): the cast
    # above is autocast's.
    try:
        plain = _first_tensor(case(make, low))
    except (RuntimeError, NotImplementedError):
        return
    assert plain.dtype != expected


@pytest.mark.parametrize("low", LOW_DTYPES, ids=["float16", "bfloat16"])
def test_promote_makes_mixed_inputs_legal(low):
    a, b = make((3,), low), make((3,), torch.float32)
    with pytest.raises(RuntimeError):
        torch.dot(a, b)
    with torch.autocast("npu", dtype=low):
        assert torch.dot(a, b).dtype == torch.float32
        # All inputs in the autocast dtype: nothing to widen.
        assert torch.dot(a, a).dtype == low


def test_binary_cross_entropy_is_refused():
    probabilities, target = make((4,), torch.float32), make((4,), torch.float32)
    assert REFUSED == {"binary_cross_entropy.default"}
    with torch.autocast("npu", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="are unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(probabilities, target)
    torch.nn.functional.binary_cross_entropy(probabilities, target)  # fine outside autocast


@pytest.mark.parametrize("low", LOW_DTYPES, ids=["float16", "bfloat16"])
def test_operators_outside_the_lists_keep_their_dtype(low):
    x32, xlow = make((2, 3), torch.float32), make((2, 3), low)
    with torch.autocast("npu", dtype=low):
        assert torch.relu(x32).dtype == torch.float32
        assert (x32 + x32).dtype == torch.float32
        assert torch.relu(xlow).dtype == low
        assert torch.nn.functional.gelu(xlow).dtype == low
        # Integer tensors are never cast (float64 ones neither, but npu has none: torch_npu's
        # .double() gives float32).
        integers = torch.arange(6, device="npu").reshape(2, 3)
        assert torch.mm(integers, integers.t()).dtype == torch.int64


def test_cpu_tensors_are_not_cast_by_npu_autocast():
    a = torch.rand(2, 3)
    with torch.autocast("npu", dtype=torch.float16):
        assert torch.mm(a, a.t()).dtype == torch.float32


# -- training under autocast ---------------------------------------------------------------


@pytest.mark.parametrize("low", LOW_DTYPES, ids=["float16", "bfloat16"])
def test_backward_gives_float32_gradients(low):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    model = model.npu()
    x, target = make((5, 8), torch.float32), torch.tensor([0, 1, 2, 3, 0]).npu()
    with torch.autocast("npu", dtype=low):
        hidden = model[0](x)
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, target)
    assert hidden.dtype == low and logits.dtype == low
    assert loss.dtype == torch.float32  # log_softmax and nll_loss run in float32
    loss.backward()
    for parameter in model.parameters():
        assert parameter.grad.dtype == torch.float32 and parameter.grad.device.type == "npu"
        assert torch.isfinite(parameter.grad).all()


def test_weight_cast_cache():
    layer = torch.nn.Linear(4, 4).npu()
    x = make((2, 4), torch.float32)
    casts = []

    class CountCasts(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._to_copy.default:
                casts.append(args[0].shape)
            return func(*args, **(kwargs or {}))

    with torch.autocast("npu", dtype=torch.float16), CountCasts():
        layer(x)
        layer(x)
    # The weight and the bias are cast once and then served from the cache; the input each time.
    assert casts.count(torch.Size([4, 4])) == 1 and casts.count(torch.Size([4])) == 1
    assert casts.count(torch.Size([2, 4])) == 2

    casts.clear()
    with torch.autocast("npu", dtype=torch.float16, cache_enabled=False), CountCasts():
        layer(x)
        layer(x)
    assert casts.count(torch.Size([4, 4])) == 2


# -- the API -------------------------------------------------------------------------------


def test_torch_npu_amp_autocast_defaults_to_float16():
    x = make((2, 2), torch.float32)
    assert torch.npu.get_autocast_dtype() == torch.float16
    with torch.npu.amp.autocast():
        assert torch.npu.is_autocast_enabled() and torch.is_autocast_enabled("npu")
        assert torch.npu.get_autocast_dtype() == torch.float16
        assert torch.mm(x, x).dtype == torch.float16
        with torch.npu.amp.autocast(enabled=False):
            assert not torch.npu.is_autocast_enabled()
            assert torch.mm(x, x).dtype == torch.float32
    assert not torch.npu.is_autocast_enabled()
    with torch.npu.amp.autocast(dtype=torch.bfloat16):
        assert torch.mm(x, x).dtype == torch.bfloat16
    with torch.autocast(device_type="npu"):
        assert torch.mm(x, x).dtype == torch.float16


def test_torch_npu_names_are_the_same_objects():
    import torch_npu

    assert torch_npu.npu.amp.autocast is torch.npu.amp.autocast
    assert torch_npu.npu.amp.GradScaler is torch.npu.amp.GradScaler
    assert issubclass(torch.npu.amp.autocast, torch.amp.autocast_mode.autocast)
    x = make((2, 2), torch.float32)
    with torch_npu.npu.amp.autocast():
        assert torch.mm(x, x).dtype == torch.float16


def test_autocast_as_decorator():
    @torch.npu.amp.autocast(dtype=torch.bfloat16)
    def forward(x):
        return torch.mm(x, x)

    assert forward(make((2, 2), torch.float32)).dtype == torch.bfloat16


def test_set_autocast_state():
    x = make((2, 2), torch.float32)
    assert torch.npu.get_autocast_dtype() == torch.float16
    try:
        torch.npu.set_autocast_dtype(torch.bfloat16)
        assert torch.npu.get_autocast_dtype() == torch.bfloat16 == torch.get_autocast_dtype("npu")
        torch.npu.set_autocast_enabled(True)
        assert torch.npu.is_autocast_enabled()
        assert torch.mm(x, x).dtype == torch.bfloat16
    finally:
        torch.npu.set_autocast_enabled(False)
        torch.npu.set_autocast_dtype(torch.float16)
    assert torch.mm(x, x).dtype == torch.float32


def test_supported_dtypes_on_the_a2_chip():
    assert torch.npu.is_bf16_supported()
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16, torch.float32]
    x = make((2, 2), torch.float32)
    with torch.autocast("npu", dtype=torch.float32):
        assert torch.mm(x.half(), x.half()).dtype == torch.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("npu", dtype=torch.bfloat16):
            pass


def test_bfloat16_is_refused_on_the_atlas_training_chip():
    result = run_python(
        """
        import warnings
        import torch, npusim
        print(torch.npu.get_device_name(), torch.npu.is_bf16_supported(), torch.npu.get_amp_supported_dtype())
        x = torch.ones(2, 2, device="npu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.autocast("npu", dtype=torch.bfloat16):
                print(torch.is_autocast_enabled("npu"), torch.mm(x, x).dtype)
        print(any("not supported" in str(w.message) for w in caught))
        with torch.autocast("npu", dtype=torch.float16):
            print(torch.mm(x, x).dtype)
        """,
        {"NPUSIM_SOC": "Ascend910A"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Ascend910A False [torch.float16, torch.float32]",
        "False torch.float32",
        "True",
        "torch.float16",
    ]


class _ScaledMatmul(torch.autograd.Function):
    @staticmethod
    @torch.npu.amp.custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.forward_dtype = torch.mm(a, b).dtype
        return torch.mm(a, b)

    @staticmethod
    @torch.npu.amp.custom_bwd
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ctx.backward_autocast = torch.npu.is_autocast_enabled()
        return grad.mm(b.t()), a.t().mm(grad)


class _PlainMatmul(torch.autograd.Function):
    @staticmethod
    @torch.npu.amp.custom_fwd
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.mm(a, b)

    @staticmethod
    @torch.npu.amp.custom_bwd
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ctx.backward_autocast = torch.npu.is_autocast_enabled()
        ctx.backward_dtype = grad.mm(b.t()).dtype
        return grad.mm(b.t()), a.t().mm(grad)


def test_custom_fwd_with_cast_inputs_runs_in_float32():
    a = make((3, 3), torch.float16).requires_grad_()
    b = make((3, 3), torch.float32).requires_grad_()
    with torch.npu.amp.autocast():
        out = _ScaledMatmul.apply(a, b)
    assert out.dtype == torch.float32
    assert out.grad_fn.forward_dtype == torch.float32  # autocast off inside forward
    out.sum().backward()
    assert out.grad_fn.backward_autocast is False  # backward runs with forward's autocast state
    assert a.grad.dtype == torch.float16 and b.grad.dtype == torch.float32


def test_custom_bwd_restores_the_autocast_state_of_forward():
    a = make((3, 3), torch.float32).requires_grad_()
    b = make((3, 3), torch.float32).requires_grad_()
    with torch.npu.amp.autocast(dtype=torch.bfloat16):
        out = _PlainMatmul.apply(a, b)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert out.grad_fn.backward_autocast is True
    assert out.grad_fn.backward_dtype == torch.bfloat16
    assert a.grad.dtype == torch.float32

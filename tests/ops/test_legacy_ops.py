"""ModelZoo-era operators of torch_npu: npu_max, npu_silu / npu_silu_, npu_slice, fast_gelu and
npu_bert_apply_adam (ApplyAdamV2), against plain-PyTorch references, in eager mode, under
torch.jit.trace / script, and with their docstrings and public names."""

import pytest
import torch
import torch.nn.functional as F

import npusim
import torch_npu


def test_npu_max_values_int32_indices_and_gradient():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 4)
    values, indices = torch_npu.npu_max(x.npu(), dim=1)
    ref = x.max(1)
    assert indices.dtype == torch.int32 and values.dtype == torch.float32
    assert torch.equal(values.cpu(), ref.values) and torch.equal(indices.cpu().long(), ref.indices)
    for keepdim in (False, True):
        leaf = x.npu().requires_grad_()
        out, _ = torch_npu.npu_max(leaf, -1, keepdim)
        out.sum().backward()
        cpu = x.clone().requires_grad_()
        cpu.max(-1, keepdim).values.sum().backward()
        assert torch.equal(leaf.grad.cpu(), cpu.grad)
    with pytest.raises(RuntimeError, match="out of range"):
        torch_npu.npu_max(x.npu(), dim=3)


def test_npu_silu_and_in_place_silu():
    torch.manual_seed(1)
    x = torch.randn(6, 7)
    out = torch_npu.npu_silu(x.npu())
    torch.testing.assert_close(out.cpu(), F.silu(x))
    leaf = x.npu().requires_grad_()
    torch_npu.npu_silu(leaf).sum().backward()
    cpu = x.clone().requires_grad_()
    F.silu(cpu).sum().backward()
    torch.testing.assert_close(leaf.grad.cpu(), cpu.grad)
    y = x.npu()
    version = y._version
    assert torch_npu.npu_silu_(y) is y and y._version == version + 1
    torch.testing.assert_close(y.cpu(), F.silu(x))
    # A strided view is written in place.
    z = x.npu()
    torch_npu.npu_silu_(z[:, ::2])
    expected = x.clone()
    expected[:, ::2] = F.silu(expected[:, ::2])
    torch.testing.assert_close(z.cpu(), expected)
    with pytest.raises(RuntimeError, match="npu_silu supports float16, bfloat16 and float32"):
        torch_npu.npu_silu(torch.ones(3, dtype=torch.int32).npu())


def test_npu_slice_and_its_out_form():
    a = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], dtype=torch.float16)
    block = torch_npu.npu_slice(a.npu(), [0, 1], [2, 3])
    assert block.is_contiguous() and torch.equal(block.cpu(), a[0:2, 1:4])
    out = torch.zeros(2, 2, dtype=torch.float16).npu()
    assert torch_npu.npu_slice(a.npu(), [0, 3], [2, 2], out=out) is out
    assert torch.equal(out.cpu(), a[:, 3:5])
    with pytest.raises(RuntimeError, match="outside its size"):
        torch_npu.npu_slice(a.npu(), [1, 0], [2, 2])
    with pytest.raises(RuntimeError, match="one entry per dimension"):
        torch_npu.npu_slice(a.npu(), [0], [2])


def test_fast_gelu_is_npu_fast_gelu_under_its_older_name():
    x = torch.randn(10)
    torch.testing.assert_close(torch_npu.fast_gelu(x.npu()).cpu(), x * torch.sigmoid(1.702 * x))
    leaf = x.npu().requires_grad_()
    torch_npu.fast_gelu(leaf).sum().backward()
    other = x.npu().requires_grad_()
    torch_npu.npu_fast_gelu(other).sum().backward()
    assert torch.equal(leaf.grad.cpu(), other.grad.cpu())


def _bert_adam_reference(var, m, v, grad, lr, beta1, beta2, eps, max_grad_norm, global_grad_norm, weight_decay,
                         step_size=None, mode=0):
    """ApplyAdamV2 as its kernel computes it (scalar switches compared after rounding up)."""
    import math

    g = grad.clone()
    if mode == 0 and math.ceil(max_grad_norm) > 0 and math.ceil(global_grad_norm) > 1:
        g = g / global_grad_norm
    m = m * beta1 + g * (1 - beta1)
    v = v * beta2 + g * g * (1 - beta2)
    update = m / (v.sqrt() + eps)
    if mode == 0:
        if math.ceil(weight_decay) > 0:
            update = update + weight_decay * var
        var = var - lr * update
    else:
        update = update * step_size
        if math.ceil(weight_decay) > 0:
            update = update + lr * var
        var = var - update
    return var, m, v


@pytest.mark.parametrize(
    "lr, max_grad_norm, global_grad_norm, weight_decay, step_size, mode",
    [
        (0.01, -1.0, 0.0, 0.0, None, 0),  # no clipping, no decay
        (0.01, 1.0, 4.0, 0.5, None, 0),  # gradient divided by the global norm, decay
        (0.01, 1.0, 0.5, 0.0, None, 0),  # global norm rounds up to 1: no clipping
        (0.02, 0.0, 0.0, 0.3, 0.1, 1),  # mbart_adam with step size and decay
    ],
)
def test_npu_bert_apply_adam_matches_the_kernel_math(lr, max_grad_norm, global_grad_norm, weight_decay, step_size,
                                                     mode):
    torch.manual_seed(3)
    var, m, v, grad = torch.randn(64), torch.rand(64), torch.rand(64), torch.randn(64) * 0.1
    outs = (var.npu(), m.npu(), v.npu())
    result = torch_npu.npu_bert_apply_adam(lr, 0.9, 0.99, 1e-6, grad.npu(), max_grad_norm, global_grad_norm,
                                           weight_decay, step_size, mode, out=outs)
    assert all(r is o for r, o in zip(result, outs))
    expected = _bert_adam_reference(var, m, v, grad, lr, 0.9, 0.99, 1e-6, max_grad_norm, global_grad_norm,
                                     weight_decay, step_size, mode)
    for got, want in zip(outs, expected):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)


def test_npu_bert_apply_adam_needs_out():
    with pytest.raises(RuntimeError, match=r"npu_bert_apply_adam is not implemented for Tensor\n.*ERR01001"):
        torch_npu.npu_bert_apply_adam(0.1, 0.9, 0.99, 1e-6, torch.ones(4).npu(), -1.0, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="must be float16 or float32"):
        t = torch.ones(4, dtype=torch.bfloat16).npu()
        torch_npu.npu_bert_apply_adam(0.1, 0.9, 0.99, 1e-6, t, -1.0, 0.0, 0.0, out=(t, t.clone(), t.clone()))


def test_legacy_ops_trace_and_script():
    class Model(torch.nn.Module):
        def forward(self, x):
            torch_npu.npu_silu_(x)
            return torch_npu.npu_max(x, dim=1)

    x = torch.randn(5, 5)
    eager = Model()(x.npu())
    traced = torch.jit.trace(Model(), x.npu())
    assert "npu::npu_silu_" in str(traced.graph) and "npu::npu_max" in str(traced.graph)
    again = traced(x.npu())
    assert torch.equal(eager[0].cpu(), again[0].cpu()) and torch.equal(eager[1].cpu(), again[1].cpu())

    class Scripted(torch.nn.Module):
        def forward(self, x):
            return torch_npu.npu_slice(x, [0, 0], [2, 2])

    scripted = torch.jit.script(Scripted())
    assert torch.equal(scripted(x.npu()).cpu(), x[:2, :2])


def test_legacy_ops_in_estimate_only_mode():
    with npusim.estimate():
        x = torch.empty(8, 16, device="npu")
        values, indices = torch_npu.npu_max(x, dim=1, keepdim=True)
        assert values.shape == (8, 1) and indices.dtype == torch.int32
        assert torch_npu.npu_slice(x, [1, 2], [3, 4]).shape == (3, 4)
        assert torch_npu.npu_silu(x).shape == (8, 16)

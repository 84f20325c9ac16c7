"""npu_rms_norm, npu_add_rms_norm, npu_rotary_mul, npu_swiglu, npu_geglu, npu_gelu and
npu_fast_gelu (forward and backward) against plain-PyTorch references of the documented math."""

import pytest
import torch

import npusim
import torch_npu
from ops_reference import geglu, numeric_grad, rms_norm, rotary, swiglu

DTYPES = [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)]


def leaf(t):
    return t.npu().requires_grad_()


# ---------------------------------------------------------------- RMSNorm


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_rms_norm_forward_backward(dtype, tol):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16).to(dtype)
    gamma = torch.randn(16).to(dtype)
    xn, gn = leaf(x), leaf(gamma)
    y, rstd = torch_npu.npu_rms_norm(xn, gn, epsilon=1e-5)
    xr, gr = x.double().requires_grad_(), gamma.double().requires_grad_()
    ref, ref_rstd = rms_norm(xr, gr, 1e-5)
    assert y.dtype == dtype and rstd.dtype == torch.float32 and rstd.shape == (2, 3, 1)
    torch.testing.assert_close(y.cpu().double(), ref.detach(), rtol=tol, atol=tol)
    torch.testing.assert_close(rstd.cpu().double(), ref_rstd.detach(), rtol=1e-4, atol=1e-5)
    grad = torch.randn(2, 3, 16)
    y.backward(grad.to(dtype).npu())
    ref.backward(grad.to(dtype).double())
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=10 * tol, atol=10 * tol)
    torch.testing.assert_close(gn.grad.cpu().double(), gr.grad, rtol=10 * tol, atol=10 * tol)


def test_rms_norm_mixed_gamma_two_normalised_dims_and_explicit_backward():
    torch.manual_seed(1)
    x = torch.randn(3, 4, 8).to(torch.bfloat16)
    gamma = torch.randn(4, 8)  # fp32 gamma with bf16 activations (verl, LLaMA-Factory)
    y, rstd = torch_npu.npu_rms_norm(x.npu(), gamma.npu())
    assert y.dtype == torch.bfloat16 and rstd.shape == (3, 1, 1)
    ref, ref_rstd = rms_norm(x, gamma)
    torch.testing.assert_close(y.cpu().float(), ref.float(), rtol=2e-2, atol=2e-2)
    dy = torch.randn(3, 4, 8)
    xf = torch.randn(3, 4, 8)
    dx, dgamma = torch_npu.npu_rms_norm_backward(dy.npu(), xf.npu(), gamma.npu(),
                                                 torch_npu.npu_rms_norm(xf.npu(), gamma.npu())[1])
    xr, gr = xf.double().requires_grad_(), gamma.double().requires_grad_()
    rms_norm(xr, gr)[0].backward(dy.double())
    torch.testing.assert_close(dx.cpu().double(), xr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dgamma.cpu().double(), gr.grad, rtol=1e-4, atol=1e-5)


def test_rms_norm_finite_differences_and_gamma_shape_error():
    torch.manual_seed(2)
    x = torch.randn(2, 6)
    gamma = torch.randn(6)
    xn = leaf(x)
    w, numeric = numeric_grad(lambda t: torch_npu.npu_rms_norm(t.npu(), gamma.npu())[0].cpu(), x)
    (torch_npu.npu_rms_norm(xn, gamma.npu())[0] * w.float().npu()).sum().backward()
    torch.testing.assert_close(xn.grad.cpu().double(), numeric, rtol=2e-2, atol=2e-3)
    with pytest.raises(RuntimeError, match="must equal the last 1 dimensions of x"):
        torch_npu.npu_rms_norm(x.npu(), torch.ones(5).npu())


def test_add_rms_norm():
    torch.manual_seed(3)
    x1, x2, gamma = torch.randn(4, 16).half(), torch.randn(4, 16).half(), torch.randn(16).half()
    y, rstd, x = torch_npu.npu_add_rms_norm(x1.npu(), x2.npu(), gamma.npu(), 1e-6)
    ref, ref_rstd = rms_norm(x1 + x2, gamma)
    torch.testing.assert_close(x.cpu(), x1 + x2)
    torch.testing.assert_close(y.cpu().float(), ref.float(), rtol=2e-3, atol=2e-3)
    assert rstd.dtype == torch.float32 and rstd.shape == (4, 1)


# ---------------------------------------------------------------- rotary


@pytest.mark.parametrize("mode", ["half", "interleave"])
@pytest.mark.parametrize("cos_shape", [(1, 5, 1, 8), (2, 5, 1, 8), (2, 5, 3, 8)])
def test_rotary_mul_forward_backward(mode, cos_shape):
    torch.manual_seed(4)
    x = torch.randn(2, 5, 3, 8)  # BSND
    angle = torch.rand(cos_shape) * 3
    cos, sin = angle.cos(), angle.sin()
    xn, cn, sn = leaf(x), leaf(cos), leaf(sin)
    out = torch_npu.npu_rotary_mul(xn, cn, sn, mode)
    xr, cr, sr = (t.double().requires_grad_() for t in (x, cos, sin))
    ref = rotary(xr, cr, sr, mode)
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
    grad = torch.randn_like(x)
    out.backward(grad.npu())
    ref.backward(grad.double())
    for ours, theirs in ((xn, xr), (cn, cr), (sn, sr)):
        torch.testing.assert_close(ours.grad.cpu().double(), theirs.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype,tol", DTYPES[1:])
def test_rotary_mul_half_precision_and_rotate_matrix(dtype, tol):
    torch.manual_seed(5)
    x = torch.randn(1, 4, 2, 8).to(dtype)
    angle = torch.rand(1, 4, 1, 8)
    out = torch_npu.npu_rotary_mul(x.npu(), angle.cos().npu(), angle.sin().npu())  # fp32 cos/sin cast to x's dtype
    assert out.dtype == dtype
    ref = rotary(x.double(), angle.cos().to(dtype).double(), angle.sin().to(dtype).double())
    torch.testing.assert_close(out.cpu().double(), ref, rtol=tol, atol=tol)
    rotate = torch.randn(8, 8)
    out = torch_npu.npu_rotary_mul(x.float().npu(), angle.cos().npu(), angle.sin().npu(), rotate=rotate.npu())
    torch.testing.assert_close(out.cpu(), x.float() * angle.cos() + (x.float() @ rotate) * angle.sin(),
                               rtol=1e-5, atol=1e-5)


def test_rotary_mode_error():
    x = torch.randn(1, 2, 2, 4).npu()
    with pytest.raises(RuntimeError, match="The rotary_mode of npu_rotary_mul should be half or interleave, but got "
                                           "quarter"):
        torch_npu.npu_rotary_mul(x, x, x, "quarter")


# ---------------------------------------------------------------- gated activations


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_swiglu_forward_backward(dtype, tol, dim):
    torch.manual_seed(6)
    x = torch.randn(4, 6, 10).to(dtype)
    xn = leaf(x)
    out = torch_npu.npu_swiglu(xn, dim=dim)
    xr = x.double().requires_grad_()
    ref = swiglu(xr, dim)
    assert out.dtype == dtype and out.shape == ref.shape
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=tol, atol=tol)
    grad = torch.randn(ref.shape)
    out.backward(grad.to(dtype).npu())
    ref.backward(grad.to(dtype).double())
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=5 * tol, atol=5 * tol)
    direct = torch_npu.npu_swiglu_backward(grad.to(dtype).npu(), x.npu(), dim)
    torch.testing.assert_close(direct.cpu(), xn.grad.cpu())


def test_swiglu_errors():
    with pytest.raises(RuntimeError, match=r"(?s)Expected npu_swiglu dim value 3 to be in range \[-3, 2\] but check "
                                           r"failed.*ERR01003"):
        torch_npu.npu_swiglu(torch.randn(2, 2, 2).npu(), dim=3)
    with pytest.raises(RuntimeError, match="must be even"):
        torch_npu.npu_swiglu(torch.randn(2, 3).npu())


@pytest.mark.parametrize("approximate", [0, 1])
@pytest.mark.parametrize("activate_left", [False, True])
def test_geglu_forward_backward(approximate, activate_left):
    torch.manual_seed(7)
    x = torch.randn(3, 12)
    xn = leaf(x)
    y, gelu = torch_npu.npu_geglu(xn, -1, approximate, activate_left)
    xr = x.double().requires_grad_()
    ref, ref_gelu = geglu(xr, -1, approximate, activate_left)
    torch.testing.assert_close(y.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gelu.cpu().double(), ref_gelu.detach(), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_fast_gelu(approximate):
    torch.manual_seed(8)
    x = torch.randn(5, 7)
    xn = leaf(x)
    out = torch_npu.npu_gelu(xn, approximate=approximate)
    xr = x.double().requires_grad_()
    ref = torch.nn.functional.gelu(xr, approximate=approximate)
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=1e-4, atol=1e-5)
    xn = leaf(x)
    fast = torch_npu.npu_fast_gelu(xn)
    xr = x.double().requires_grad_()
    ref = xr * torch.sigmoid(1.702 * xr)
    torch.testing.assert_close(fast.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
    fast.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=1e-4, atol=1e-5)


def test_swiglu_finite_differences():
    torch.manual_seed(9)
    x = torch.randn(2, 6)
    xn = leaf(x)
    w, numeric = numeric_grad(lambda t: torch_npu.npu_swiglu(t.npu()).cpu(), x)
    (torch_npu.npu_swiglu(xn) * w.float().npu()).sum().backward()
    torch.testing.assert_close(xn.grad.cpu().double(), numeric, rtol=2e-2, atol=2e-3)


def test_estimate_only_shapes():
    with npusim.estimate():
        with torch.device("npu"):
            x = torch.empty(4, 4096, 8192, dtype=torch.bfloat16)
            gamma = torch.empty(8192, dtype=torch.bfloat16)
        y, rstd = torch_npu.npu_rms_norm(x, gamma)
        assert y.shape == x.shape and rstd.shape == (4, 4096, 1)
        assert torch_npu.npu_swiglu(x).shape == (4, 4096, 4096)
        cos = torch.empty(1, 4096, 1, 128, device="npu", dtype=torch.bfloat16)
        q = torch.empty(4, 4096, 64, 128, device="npu", dtype=torch.bfloat16)
        assert torch_npu.npu_rotary_mul(q, cos, cos).shape == q.shape


def test_torch_compile_traces_the_operators_with_their_meta_kernels_and_autograd():
    def step(x, gamma, q):
        y = torch_npu.npu_rms_norm(x, gamma)[0]
        attention = torch_npu.npu_fusion_attention(q, q, q, 2, "BNSD", scale=0.5)[0]
        return torch_npu.npu_swiglu(y).sum() + attention.sum()

    torch.manual_seed(10)
    args = [torch.randn(4, 8).npu().requires_grad_(), torch.rand(8).npu().requires_grad_(),
            torch.randn(1, 2, 4, 8).npu().requires_grad_()]
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    compiled(*args).backward()
    grads = [a.grad.cpu().clone() for a in args]
    for a in args:
        a.grad = None
    step(*args).backward()
    for ours, eager in zip(grads, (a.grad.cpu() for a in args)):
        torch.testing.assert_close(ours, eager, rtol=1e-5, atol=1e-6)

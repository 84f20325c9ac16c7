"""fp16 and bf16 matrix products compute as the Cube does: exact products, fp32 accumulation, one
rounding to the 16-bit result. npusim runs them as the fp32 kernel on upcast copies (PyTorch's
16-bit CPU GEMM is a reference loop, many times slower), so every result equals the fp32 product
of the upcast operands rounded once, deterministically, and the fp32 copies are host scratch that
never counts as device memory."""

import pytest
import torch
import torch.nn.functional as F

import npusim  # noqa: F401

DTYPES = [torch.float16, torch.bfloat16]
IDS = ["fp16", "bf16"]


def _rounded_fp32(fn, dtype, *operands):
    return fn(*(t.float() if t.is_floating_point() else t for t in operands)).to(dtype)


PRODUCTS = {
    "mm": (lambda a, b: a @ b, [(33, 47), (47, 29)]),
    "bmm": (torch.bmm, [(3, 17, 40), (3, 40, 9)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(21, 13), (21, 64), (64, 13)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b), [(2, 7, 5), (2, 7, 30), (2, 30, 5)]),
    "addmv": (torch.addmv, [(19,), (19, 50), (50,)]),
    "dot": (torch.dot, [(200,), (200,)]),
    "linear": (F.linear, [(4, 6, 32), (24, 32), (24,)]),
    "matmul-broadcast": (torch.matmul, [(2, 3, 8, 16), (16, 4)]),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_equal_the_rounded_fp32_product(name, dtype):
    fn, shapes = PRODUCTS[name]
    generator = torch.Generator().manual_seed(0)
    operands = [torch.randn(shape, generator=generator).to(dtype) for shape in shapes]
    expected = _rounded_fp32(fn, dtype, *operands)
    result = fn(*(t.npu() for t in operands))
    assert result.dtype == dtype and result.device.type == "npu"
    assert torch.equal(result.cpu(), expected)
    assert torch.equal(fn(*(t.npu() for t in operands)).cpu(), result.cpu())  # deterministic


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_in_place_and_out_forms_round_into_their_tensor(dtype):
    generator = torch.Generator().manual_seed(1)
    c, a, b = (torch.randn(shape, generator=generator).to(dtype) for shape in [(8, 6), (8, 12), (12, 6)])
    target = c.npu()
    returned = target.addmm_(a.npu(), b.npu())
    assert returned is target
    assert torch.equal(target.cpu(), torch.addmm(c.float(), a.float(), b.float()).to(dtype))
    out = torch.empty(0, dtype=dtype, device="npu")  # resized by the out= kernel
    torch.mm(a.npu(), b.npu(), out=out)
    assert out.shape == (8, 6) and torch.equal(out.cpu(), (a.float() @ b.float()).to(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_fused_attention_accumulates_in_fp32(dtype):
    generator = torch.Generator().manual_seed(2)
    q, k, v, grad = (torch.randn(2, 3, 16, 8, generator=generator).to(dtype) for _ in range(4))
    leaves = [t.npu().requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=True)
    out.backward(grad.npu())
    # Forward: the fp32 kernel on the upcast inputs, rounded once.
    expected, logsumexp = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q.float(), k.float(), v.float(), 0.0, True)
    assert out.dtype == dtype and torch.equal(out.detach().cpu(), expected.to(dtype))
    # Backward: the fp32 gradient kernel on the upcast gradient, inputs and the saved 16-bit output.
    grads = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad.float(), q.float(), k.float(), v.float(), out.detach().cpu().float(), logsumexp, 0.0, True)
    for leaf, want in zip(leaves, grads):
        assert leaf.grad.dtype == dtype and torch.equal(leaf.grad.cpu(), want.to(dtype))


def test_fp32_scratch_is_not_device_memory():
    a = torch.randn(512, 512, dtype=torch.float16, device="npu")
    b = torch.randn(512, 512, dtype=torch.float16, device="npu")
    torch.npu.synchronize()
    torch.npu.reset_peak_memory_stats()
    before = torch.npu.memory_allocated()
    c = a @ b
    # The fp16 result is the new device memory: no fp32 copies of a, b or c (3 MiB more).
    assert c.untyped_storage().nbytes() <= torch.npu.max_memory_allocated() - before < 2 * c.untyped_storage().nbytes()

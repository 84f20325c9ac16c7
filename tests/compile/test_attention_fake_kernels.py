"""Every attention operator npusim runs on npu returns what its fake (Meta) kernel says it returns:
sizes, strides, dtypes, devices, storage offsets and aliasing, checked by PyTorch's own
CrossRefFakeMode (which runs each operator on fake copies of its inputs next to the real call).
torch.compile traces with the fake kernels and Inductor asserts every extern kernel's outputs
against them, so a mismatch fails compiled programs (nanoGPT's first training step failed with
"expected size 2==2, stride 1==64 at dim=1" from the fused SDPA's logsumexp).

Covered: SDPA's npu backends (the fused "overrideable" kernel and its backward, the math path,
the CPU flash operators when called directly), torch_npu's npu_fusion_attention and its grad,
npu_prompt_flash_attention, npu_incre_flash_attention and npu_fused_infer_attention_score, in
training (inputs that require grad) and inference (no_grad) mode, then compiled end to end.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_utils import CrossRefFakeMode
from torch.nn.attention import SDPBackend

import npusim  # noqa: F401
import torch_npu

B, N, S, D = 2, 4, 8, 16
OVERRIDEABLE, MATH = int(SDPBackend.OVERRIDEABLE), int(SDPBackend.MATH)


def _tensor(*shape, requires_grad=False, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=generator, dtype=dtype).to("npu").requires_grad_(requires_grad)


def _qkv(layout="BNSD", requires_grad=False, dtype=torch.float32):
    """Query, key, value in a layout: contiguous BNSD, the (B, S, N, D) transposed views of
    Hugging Face models, or nanoGPT's views of one (B, S, 3*N*D) projection (not dense)."""
    if layout == "BNSD":
        return [_tensor(B, N, S, D, requires_grad=requires_grad, dtype=dtype, seed=i) for i in range(3)]
    if layout == "BSND-transposed":
        return [_tensor(B, S, N, D, requires_grad=requires_grad, dtype=dtype, seed=i).transpose(1, 2)
                for i in range(3)]
    projection = _tensor(B, S, 3 * N * D, requires_grad=requires_grad, dtype=dtype)
    return [t.view(B, S, N, D).transpose(1, 2) for t in projection.split(N * D, dim=2)]


def _cross_checked(run):
    """run() under CrossRefFakeMode: every operator's real outputs against its fake ones."""
    with CrossRefFakeMode(check_strides=True, check_aliasing=True):
        return run()


@pytest.fixture(params=["training", "inference"])
def mode(request):
    """Training: inputs require grad (the autograd path); inference: under no_grad."""
    if request.param == "training":
        yield True
    else:
        with torch.no_grad():
            yield False


# ---- scaled_dot_product_attention's npu backends

@pytest.mark.parametrize("layout", ["BNSD", "BSND-transposed", "nanogpt-split"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_fused_sdpa_forward_and_backward_match_their_meta(layout, dtype, causal, mode):
    q, k, v = _qkv(layout, requires_grad=mode, dtype=dtype)
    assert torch._fused_sdp_choice(q, k, v, is_causal=causal) == OVERRIDEABLE
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default
    result = _cross_checked(lambda: op(q, k, v, None, 0.0, causal))
    out, logsumexp = result[0], result[1]
    assert logsumexp.dtype == torch.float32 and logsumexp.is_contiguous()
    backward = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward.default
    grad = torch.randn_like(out)
    grads = _cross_checked(lambda: backward(grad, q, k, v, None, [True, True, True, False], out, logsumexp,
                                            result[2], result[3], result[4], result[5], 0.0, causal, result[6],
                                            result[7]))
    for gradient, source in zip(grads[:3], (q, k, v)):
        assert gradient.shape == source.shape
    # The autograd path through F.scaled_dot_product_attention, backward included.
    def forward_backward():
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if mode:
            attended.backward(torch.ones_like(attended))
        return attended

    _cross_checked(forward_backward)


@pytest.mark.parametrize("mask_shape", [(S, S), (B, 1, S, S), (B, N, S, S)])
def test_fused_sdpa_with_an_additive_mask_matches_its_meta(mask_shape, mode):
    q, k, v = _qkv("BSND-transposed", requires_grad=mode)
    mask = _tensor(*mask_shape, seed=5)
    assert torch._fused_sdp_choice(q, k, v, attn_mask=mask) == OVERRIDEABLE
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default
    result = _cross_checked(lambda: op(q, k, v, mask, 0.0, False))
    backward = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward.default
    for wants_bias_grad in (False, True):
        grads = _cross_checked(lambda: backward(torch.ones_like(result[0]), q, k, v, mask,
                                                [True, True, True, wants_bias_grad], result[0], result[1], result[2],
                                                result[3], result[4], result[5], 0.0, False, result[6], result[7]))
        assert grads[3].shape == mask.shape


def test_fused_sdpa_bias_gradient_equals_the_math_path():
    """A bias that requires grad gets its gradient from the fused backward (direct calls of the
    operator; SDPA itself sends such a bias to the math path)."""
    q, k, v = _qkv("BNSD", requires_grad=True)
    bias = _tensor(B, 1, S, S, requires_grad=True, seed=9)
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default
    out = op(q, k, v, bias, 0.0, False)[0]
    grads = torch.autograd.grad(out.sum(), (q, k, v, bias))
    q_, k_, v_, bias_ = (t.detach().cpu().double().requires_grad_() for t in (q, k, v, bias))
    expected_out = torch.ops.aten._scaled_dot_product_attention_math(q_, k_, v_, bias_)[0]
    expected = torch.autograd.grad(expected_out.sum(), (q_, k_, v_, bias_))
    torch.testing.assert_close(out.detach().cpu().double(), expected_out.detach(), rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got.cpu().double(), want, rtol=1e-4, atol=1e-5)


def test_sdpa_math_path_matches_its_meta(mode):
    """Where the CPU would not fuse (dropout, a bias that requires grad), SDPA decomposes."""
    q, k, v = _qkv("BNSD", requires_grad=mode)
    bias = _tensor(S, S, requires_grad=mode, seed=7)
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.5) == MATH
    if mode:
        assert torch._fused_sdp_choice(q, k, v, attn_mask=bias) == MATH

    def run():
        results = [F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
                   F.scaled_dot_product_attention(q, k, v, attn_mask=bias)]
        if mode:
            sum(r.sum() for r in results).backward()
        return results

    _cross_checked(run)


def test_cpu_flash_operators_called_directly_match_their_meta(mode):
    q, k, v = _qkv("BNSD", requires_grad=mode)
    out, logsumexp = _cross_checked(lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v))
    _cross_checked(lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        torch.ones_like(out), q, k, v, out, logsumexp, 0.0, False))


# ---- torch_npu's attention operators

def _layout_tensors(layout, requires_grad=False, sq=S, skv=S, heads=N, kv_heads=N):
    shapes = {
        "BSH": ((B, sq, heads * D), (B, skv, kv_heads * D)),
        "SBH": ((sq, B, heads * D), (skv, B, kv_heads * D)),
        "BSND": ((B, sq, heads, D), (B, skv, kv_heads, D)),
        "BNSD": ((B, heads, sq, D), (B, kv_heads, skv, D)),
    }[layout]
    return (_tensor(*shapes[0], requires_grad=requires_grad, seed=1),
            _tensor(*shapes[1], requires_grad=requires_grad, seed=2),
            _tensor(*shapes[1], requires_grad=requires_grad, seed=3))


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("kv_heads", [N, 2])
def test_npu_fusion_attention_and_its_grad_match_their_meta(layout, kv_heads, mode):
    q, k, v = _layout_tensors(layout, requires_grad=mode, kv_heads=kv_heads)
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool), 1).to("npu")
    result = _cross_checked(lambda: torch_npu.npu_fusion_attention(q, k, v, N, layout, atten_mask=mask, scale=0.25,
                                                                   sparse_mode=0, pre_tockens=S, next_tockens=0))
    out, softmax_max, softmax_sum = result[0], result[1], result[2]
    _cross_checked(lambda: torch.ops.npu.npu_fusion_attention_grad(
        q, k, v, torch.ones_like(out), N, layout, atten_mask=mask, softmax_max=softmax_max, softmax_sum=softmax_sum,
        attention_in=out, scale_value=0.25, pre_tockens=S, next_tockens=0))
    if mode:
        _cross_checked(lambda: out.sum().backward())


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_inference_attention_operators_match_their_meta(layout, mode):
    q, k, v = _layout_tensors(layout, kv_heads=2)
    _cross_checked(lambda: torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=N, num_key_value_heads=2,
                                                                input_layout=layout, scale_value=0.25))
    for lse in (False, True):
        _cross_checked(lambda: torch_npu.npu_fused_infer_attention_score(
            q, k, v, num_heads=N, num_key_value_heads=2, input_layout=layout, scale=0.25, softmax_lse_flag=lse))
    decode, cache_k, cache_v = _layout_tensors(layout, sq=1, kv_heads=2)
    _cross_checked(lambda: torch_npu.npu_incre_flash_attention(decode, cache_k, cache_v, num_heads=N,
                                                               num_key_value_heads=2, input_layout=layout,
                                                               scale_value=0.25))
    _cross_checked(lambda: torch_npu.npu_fused_infer_attention_score(
        decode, cache_k, cache_v, num_heads=N, num_key_value_heads=2, input_layout=layout, scale=0.25,
        actual_seq_lengths_kv=[S - 2, S], softmax_lse_flag=True))


# ---- compiled end to end (the four lines of the nanoGPT report, and their neighbours)

@pytest.mark.parametrize("layout", ["BNSD", "BSND-transposed", "nanogpt-split"])
def test_compiled_causal_sdpa_trains_equal_to_eager(layout):
    torch._dynamo.reset()
    q, k, v = _qkv(layout, requires_grad=True)

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).square().sum()

    compiled = torch.compile(attend)(q, k, v)
    compiled_grads = torch.autograd.grad(compiled, (q, k, v))
    eager = attend(q, k, v)
    eager_grads = torch.autograd.grad(eager, (q, k, v))
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), rtol=1e-4, atol=1e-4)
    for got, want in zip(compiled_grads, eager_grads):
        torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-4, atol=1e-4)


def test_compiled_npu_fusion_attention_trains_equal_to_eager():
    torch._dynamo.reset()
    q, k, v = _layout_tensors("BSH", requires_grad=True, kv_heads=2)

    def attend(q, k, v):
        return torch_npu.npu_fusion_attention(q, k, v, N, "BSH", scale=0.25)[0].square().sum()

    compiled = torch.compile(attend)(q, k, v)
    compiled_grads = torch.autograd.grad(compiled, (q, k, v))
    eager = attend(q, k, v)
    eager_grads = torch.autograd.grad(eager, (q, k, v))
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), rtol=1e-4, atol=1e-4)
    for got, want in zip(compiled_grads, eager_grads):
        torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-4, atol=1e-4)

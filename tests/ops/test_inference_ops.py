"""The inference attention operators (prompt, incremental and fused infer attention) against the
float64 reference, and the chip rules: an operator the chosen NPUSIM_SOC does not support raises
torch_npu's not-supported error."""

import math

import pytest
import torch

import npusim
import torch_npu
from ops_reference import attention, from_bnsd, run_python, sparse_mask, to_bnsd


def qkv(b=2, n=4, nkv=2, sq=5, skv=7, d=8, dtype=torch.float32):
    torch.manual_seed(0)
    return (torch.randn(b, n, sq, d).to(dtype), torch.randn(b, nkv, skv, d).to(dtype),
            torch.randn(b, nkv, skv, d).to(dtype))


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_prompt_flash_attention_layouts_gqa_and_causal_default(layout):
    q, k, v = qkv()
    scale = 1 / math.sqrt(8)
    args = [from_bnsd(t, layout).contiguous().npu() for t in (q, k, v)]
    out = torch_npu.npu_prompt_flash_attention(*args, num_heads=4, num_key_value_heads=2, scale_value=scale,
                                               input_layout=layout)
    torch.testing.assert_close(out.cpu().double(), from_bnsd(attention(q, k, v, scale)[0], layout), rtol=1e-5,
                               atol=1e-5)
    # With a mask, next_tokens' default 0 makes a causal band on top of it.
    mask = torch.zeros(5, 7, dtype=torch.bool)
    out = torch_npu.npu_prompt_flash_attention(*args, num_heads=4, num_key_value_heads=2, scale_value=scale,
                                               input_layout=layout, atten_mask=mask.npu())
    ref = attention(q, k, v, scale, mask=sparse_mask(0, 5, 7, nxt=0))[0]
    torch.testing.assert_close(out.cpu().double(), from_bnsd(ref, layout), rtol=1e-5, atol=1e-5)


def test_fused_infer_attention_prefill_decode_lse_and_valid_lengths():
    q, k, v = qkv(sq=6, skv=6)
    scale = 0.3
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    out, lse = torch_npu.npu_fused_infer_attention_score(
        q.npu(), k.npu(), v.npu(), atten_mask=mask.npu(), num_heads=4, num_key_value_heads=2, scale=scale,
        input_layout="BNSD", sparse_mode=3, softmax_lse_flag=True)
    ref, m, l = attention(q, k, v, scale, mask=sparse_mask(3, 6, 6))
    torch.testing.assert_close(out.cpu().double(), ref, rtol=1e-5, atol=1e-5)
    assert lse.shape == (2, 4, 6, 1) and lse.dtype == torch.float32
    torch.testing.assert_close(lse.cpu().double()[..., 0], m + torch.log(l), rtol=1e-5, atol=1e-5)
    # Decode: Q_S = 1 against a cache with per-batch valid lengths.
    qd = q[:, :, :1]
    out, lse = torch_npu.npu_fused_infer_attention_score(
        qd.npu(), k.npu(), v.npu(), num_heads=4, num_key_value_heads=2, scale=scale, input_layout="BNSD",
        actual_seq_lengths_kv=[4, 6])
    assert lse.shape == (1,)
    for b, length in enumerate([4, 6]):
        ref = attention(qd[b:b + 1], k[b:b + 1, :, :length], v[b:b + 1, :, :length], scale)[0]
        torch.testing.assert_close(out.cpu()[b:b + 1].double(), ref, rtol=1e-5, atol=1e-5)
    inc = torch_npu.npu_incre_flash_attention(
        from_bnsd(qd, "BSH").contiguous().npu(), from_bnsd(k, "BSH").contiguous().npu(),
        from_bnsd(v, "BSH").contiguous().npu(), num_heads=4, num_key_value_heads=2, scale_value=scale,
        actual_seq_lengths=[4, 6])
    torch.testing.assert_close(inc.cpu(), from_bnsd(out.cpu(), "BSH"), rtol=1e-6, atol=1e-6)


def test_inference_attention_half_precision_bnsd_bsnd_and_errors():
    q, k, v = qkv(dtype=torch.float16)
    out = torch_npu.npu_fused_infer_attention_score(q.npu(), k.npu(), v.npu(), num_heads=4, num_key_value_heads=2,
                                                    scale=0.35, input_layout="BNSD_BSND")[0]
    assert out.dtype == torch.float16 and out.shape == (2, 5, 4, 8)
    ref = attention(q, k, v, 0.35)[0].permute(0, 2, 1, 3)
    torch.testing.assert_close(out.cpu().double(), ref, rtol=5e-3, atol=5e-3)
    with pytest.raises(RuntimeError, match="numHeads should be greater than 0, but got 0"):
        torch_npu.npu_fused_infer_attention_score(q.npu(), k.npu(), v.npu(), num_heads=0, input_layout="BNSD")
    with pytest.raises(RuntimeError, match="not supported by npusim"):
        torch_npu.npu_fused_infer_attention_score(q.npu(), k.npu(), v.npu(), num_heads=4, input_layout="BNSD",
                                                  block_table=torch.zeros(2, 1, dtype=torch.int32).npu())


def test_prompt_flash_attention_fp16_runs_the_high_performance_mode():
    """fp16 without pse_shift: Q K^T is kept in fp16 before the scale and the probabilities are
    rounded to fp16 before V (torch_npu's own test compares against exactly that matmul and
    softmax chain, with a scale of 128 that makes the fp16 rounding of the scores visible)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 256, 64, dtype=torch.float16) for _ in range(3))
    scores = torch.matmul(q.float(), k.float().transpose(2, 3)).half().float() * 128
    probs = torch.softmax(scores, -1).half().float()
    expected = torch.matmul(probs, v.float()).half()
    got = torch_npu.npu_prompt_flash_attention(
        q.npu(), k.npu(), v.npu(), num_heads=2, input_layout="BNSD", scale_value=128.0, pre_tokens=65535,
        next_tokens=65535
    ).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)
    exact = torch.matmul(torch.softmax(torch.matmul(q.double(), k.double().transpose(2, 3)) * 128, -1), v.double())
    assert not torch.allclose(got.double(), exact, rtol=1e-3, atol=1e-3)  # not the fp32 path
    # With a pse_shift the kernel switches to the high-precision mode (fp32 scores).
    pse = torch.zeros(1, 2, 256, 256, dtype=torch.float16)
    precise = torch_npu.npu_prompt_flash_attention(
        q.npu(), k.npu(), v.npu(), pse_shift=pse.npu(), num_heads=2, input_layout="BNSD", scale_value=128.0,
        pre_tokens=65535, next_tokens=65535
    ).cpu()
    torch.testing.assert_close(precise.double(), exact, rtol=2e-3, atol=2e-3)


def test_inference_attention_estimate_shapes():
    with npusim.estimate():
        q = torch.empty(8, 1, 32 * 128, device="npu", dtype=torch.bfloat16)
        kv = torch.empty(8, 2048, 8 * 128, device="npu", dtype=torch.bfloat16)
        out = torch_npu.npu_incre_flash_attention(q, kv, kv, num_heads=32, num_key_value_heads=8,
                                                  scale_value=0.088)
        assert out.shape == q.shape


def test_chip_rules_on_ascend910a():
    result = run_python(
        """
        import torch, torch_npu
        x = torch.randn(1, 2, 4, 8).npu()
        checks = []
        for name, call in [
            ("npu_fusion_attention", lambda: torch_npu.npu_fusion_attention(x, x, x, 2, "BNSD")),
            ("npu_swiglu", lambda: torch_npu.npu_swiglu(x)),
            ("npu_grouped_matmul", lambda: torch_npu.npu_grouped_matmul([x[0, 0]], [x[0, 0].t().contiguous()])),
            ("npu_cross_entropy_loss", lambda: torch_npu.npu_cross_entropy_loss(
                x[0, 0], torch.zeros(4, dtype=torch.long).npu())),
        ]:
            try:
                call()
                checks.append(name + ": ran")
            except RuntimeError as error:
                checks.append(name + ": " + str(error).splitlines()[0] + " | " + str(error).splitlines()[-1])
        y, rstd = torch_npu.npu_rms_norm(x, torch.ones(8).npu())  # supported on every chip
        checks.append("npu_rms_norm: ran")
        try:
            torch_npu.npu_rms_norm(x.bfloat16(), torch.ones(8).npu())
        except RuntimeError as error:
            checks.append("bf16: " + str(error).splitlines()[0])
        print("\\n".join(checks))
        """,
        env={"NPUSIM_SOC": "Ascend910A"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in ("npu_fusion_attention", "npu_swiglu", "npu_grouped_matmul", "npu_cross_entropy_loss"):
        line = next(line for line in lines if line.startswith(name + ":"))
        assert f"{name} is not supported on Ascend910A" in line and "ERR01007 OPS feature not supported" in line, line
    assert "npu_rms_norm: ran" in lines
    assert any(line.startswith("bf16:") and "bfloat16 is not supported on Ascend910A" in line for line in lines)


def test_quant_matmul():
    torch.manual_seed(4)
    x1 = torch.randint(-128, 128, (3, 2, 64), dtype=torch.int8)
    x2 = torch.randint(-128, 128, (64, 5), dtype=torch.int8)
    scale = torch.rand(5) * 1e-3
    pertoken = torch.rand(3, 2)
    exact = x1.long() @ x2.long()
    out = torch_npu.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(), pertoken_scale=pertoken.npu(),
                                     output_dtype=torch.float16)
    assert out.dtype == torch.float16 and out.shape == (3, 2, 5)
    torch.testing.assert_close(out.cpu().double(), exact.double() * scale.double() * pertoken.double()[..., None],
                               rtol=1e-3, atol=1e-3)
    bias = torch.randint(-1000, 1000, (5,), dtype=torch.int32)
    out = torch_npu.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(), bias=bias.npu())
    assert out.dtype == torch.int8
    expected = torch.round((exact + bias).double() * scale.double()).clamp(-128, 127).to(torch.int8)
    assert torch.equal(out.cpu(), expected)
    assert torch.equal(torch_npu.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(), output_dtype=torch.int32).cpu(),
                       exact.int())


def neox_rope(x, cos, sin, head_size, interleave=False):
    """vLLM's rotary embedding on [T, heads * head_size] with cos/sin [T, rotary_dim / 2]."""
    t = x.view(x.shape[0], -1, head_size).double()
    rot_dim = cos.shape[-1] * 2
    rot, rest = t[..., :rot_dim], t[..., rot_dim:]
    c, s = cos[:, None].double(), sin[:, None].double()
    if interleave:
        a, b = rot[..., ::2], rot[..., 1::2]
        rot = torch.stack((a * c - b * s, b * c + a * s), -1).flatten(-2)
    else:
        a, b = rot.chunk(2, -1)
        rot = torch.cat((a * c - b * s, b * c + a * s), -1)
    return torch.cat((rot, rest), -1).reshape(x.shape)


@pytest.mark.parametrize("mode", ["half", "interleave"])
def test_mrope_text_and_multimodal_positions(mode):
    torch.manual_seed(5)
    tokens, head, rot = 6, 16, 12
    cache = torch.randn(32, rot)
    q, k = torch.randn(tokens, 2 * head), torch.randn(tokens, 1 * head)
    positions = torch.randint(0, 32, (tokens,))
    oq, ok = torch_npu.npu_mrope(positions.npu(), q.npu(), k.npu(), cache.npu(), head, rotary_mode=mode)
    cos, sin = cache[positions].chunk(2, -1)
    interleave = mode == "interleave"
    torch.testing.assert_close(oq.cpu().double(), neox_rope(q, cos, sin, head, interleave), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ok.cpu().double(), neox_rope(k, cos, sin, head, interleave), rtol=1e-5, atol=1e-5)
    positions3 = torch.randint(0, 32, (3, tokens))
    section = [2, 2, 2]
    oq, _ = torch_npu.npu_mrope(positions3.npu(), q.npu(), k.npu(), cache.npu(), head, mrope_section=section,
                                rotary_mode=mode)
    cos3, sin3 = cache[positions3].chunk(2, -1)  # [3, T, rot/2]
    cos = torch.cat([cos3[i, :, 2 * i:2 * i + 2] for i in range(3)], -1)
    sin = torch.cat([sin3[i, :, 2 * i:2 * i + 2] for i in range(3)], -1)
    torch.testing.assert_close(oq.cpu().double(), neox_rope(q, cos, sin, head, interleave), rtol=1e-5, atol=1e-5)


def test_scatter_nd_update_writes_cache_slots_in_place():
    cache = torch.zeros(4, 3, 2)
    indices = torch.tensor([[2], [0]])
    updates = torch.arange(12, dtype=torch.float32).reshape(2, 3, 2)
    npu_cache = cache.npu()
    version = npu_cache._version
    result = torch_npu.npu_scatter_nd_update_(npu_cache, indices.npu(), updates.npu())
    assert result is npu_cache and npu_cache._version == version + 1
    expected = cache.clone()
    expected[2], expected[0] = updates[0], updates[1]
    assert torch.equal(npu_cache.cpu(), expected)
    # Two index dimensions address single rows of the last dimension's slices.
    torch_npu.npu_scatter_nd_update_(npu_cache, torch.tensor([[1, 2]], dtype=torch.int32).npu(),
                                     torch.tensor([[7.0, 8.0]]).npu())
    assert npu_cache.cpu()[1, 2].tolist() == [7.0, 8.0]
    with pytest.raises(RuntimeError, match="updates must have shape"):
        torch_npu.npu_scatter_nd_update_(npu_cache, indices.npu(), torch.zeros(2, 3).npu())

"""npu_fusion_attention and npu_fusion_attention_grad against a float64 reference written from
the documented math: every layout, the sparse modes, GQA, pse, TND varlen, dropout bookkeeping,
the 7-tuple and its fp32 [B, N, S, 8] softmax statistics, fp16/bf16, finite differences, errors,
estimate-only shapes."""

import math

import pytest
import torch

import npusim
import torch_npu
from ops_reference import attention, from_bnsd, numeric_grad, sparse_mask, to_bnsd

LAYOUTS = ["BSH", "SBH", "BSND", "BNSD"]


def make_qkv(layout, b=2, n=4, nkv=2, sq=6, skv=6, d=8, dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    q = torch.randn(b, n, sq, d, dtype=dtype)
    k = torch.randn(b, nkv, skv, d, dtype=dtype)
    v = torch.randn(b, nkv, skv, d, dtype=dtype)
    return [from_bnsd(t, layout).contiguous() for t in (q, k, v)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_and_backward_match_reference_in_every_layout(layout):
    n = 4
    q, k, v = make_qkv(layout, n=n)
    scale = 1 / math.sqrt(8)
    qn, kn, vn = (t.npu().requires_grad_() for t in (q, k, v))
    out, smax, ssum, sout, seed, offset, numels = torch_npu.npu_fusion_attention(qn, kn, vn, n, layout, scale=scale)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    ref, m, l = attention(to_bnsd(qr, layout, n), to_bnsd(kr, layout, 2), to_bnsd(vr, layout, 2), scale)
    ref_out = from_bnsd(ref, layout)
    torch.testing.assert_close(out.cpu().double(), ref_out.detach(), rtol=1e-5, atol=1e-5)
    assert smax.shape == (2, n, 6, 8) and smax.dtype == torch.float32
    assert ssum.shape == (2, n, 6, 8) and ssum.dtype == torch.float32
    torch.testing.assert_close(smax.cpu()[..., 0].double(), m.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ssum.cpu()[..., 0].double(), l.detach(), rtol=1e-5, atol=1e-5)
    assert (smax.cpu() == smax.cpu()[..., :1]).all()  # 8 equal lanes
    assert sout.shape == (0,) and (seed, offset, numels) == (0, 0, 2 * n * 6 * 6)
    grad = torch.randn_like(ref_out)
    out.backward(grad.float().npu())
    ref_out.backward(grad)
    for ours, theirs in ((qn, qr), (kn, kr), (vn, vr)):
        torch.testing.assert_close(ours.grad.cpu().double(), theirs.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "mode,sq,skv,pre,nxt",
    [(0, 6, 6, 2, 1), (1, 6, 6, 0, 0), (2, 5, 7, 0, 0), (3, 5, 7, 0, 0), (3, 7, 5, 0, 0), (4, 6, 8, 2, 1)],
)
def test_sparse_modes(mode, sq, skv, pre, nxt):
    n = 2
    q, k, v = make_qkv("BNSD", n=n, nkv=n, sq=sq, skv=skv)
    if mode in (0, 1):
        given = torch.rand(sq, skv) < 0.3
        given[:, 0] = False  # no fully masked row
        passed = given
        reference_mask = given | sparse_mask(0, sq, skv, pre, nxt) if mode == 0 else given
    else:
        passed = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
        reference_mask = sparse_mask(mode, sq, skv, pre, nxt)
    qn, kn, vn = (t.npu().requires_grad_() for t in (q, k, v))
    out = torch_npu.npu_fusion_attention(qn, kn, vn, n, "BNSD", atten_mask=passed.npu(), scale=0.3,
                                         pre_tockens=pre if mode in (0, 4) else 2147483647,
                                         next_tockens=nxt if mode in (0, 4) else 2147483647, sparse_mode=mode)[0]
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    ref = attention(qr, kr, vr, 0.3, mask=reference_mask)[0]
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(qn.grad.cpu().double(), qr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(kn.grad.cpu().double(), kr.grad, rtol=1e-4, atol=1e-5)


def test_no_mask_ignores_sparse_mode():
    q, k, v = make_qkv("BNSD", n=2, nkv=2)
    full = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), 2, "BNSD", sparse_mode=3)[0]
    torch.testing.assert_close(full.cpu().double(), attention(q, k, v, 1.0)[0], rtol=1e-5, atol=1e-5)


def test_scale_defaults_to_one_and_layout_is_positional_and_case_insensitive():
    q, k, v = make_qkv("BSND", n=2, nkv=2)
    out = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), 2, "bsnd")[0]
    ref = from_bnsd(attention(to_bnsd(q, "BSND", 2), to_bnsd(k, "BSND", 2), to_bnsd(v, "BSND", 2), 1.0)[0], "BSND")
    torch.testing.assert_close(out.cpu().double(), ref, rtol=1e-5, atol=1e-5)


def test_pse_is_added_before_scaling_and_gets_a_gradient():
    n = 2
    q, k, v = make_qkv("BNSD", n=n, nkv=n)
    pse = torch.randn(1, n, 6, 6)
    qn, pn = q.npu().requires_grad_(), pse.npu().requires_grad_()
    out = torch_npu.npu_fusion_attention(qn, k.npu(), v.npu(), n, "BNSD", pse=pn, scale=0.5)[0]
    qr, pr = q.double().requires_grad_(), pse.double().requires_grad_()
    ref = attention(qr, k, v, 0.5, pse=pr)[0]
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    ref.square().sum().backward()
    torch.testing.assert_close(pn.grad.cpu().double(), pr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(qn.grad.cpu().double(), qr.grad, rtol=1e-4, atol=1e-5)


def test_tnd_varlen_matches_per_sequence_reference():
    n, nkv, d = 4, 2, 8
    lengths_q, lengths_kv = [3, 0, 5], [4, 2, 5]
    torch.manual_seed(1)
    q = torch.randn(sum(lengths_q), n, d)
    k = torch.randn(sum(lengths_kv), nkv, d)
    v = torch.randn(sum(lengths_kv), nkv, d)
    cum_q = torch.tensor(lengths_q).cumsum(0).tolist()
    cum_kv = torch.tensor(lengths_kv).cumsum(0).tolist()
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    qn, kn, vn = (t.npu().requires_grad_() for t in (q, k, v))
    out, smax, ssum, _, _, _, numels = torch_npu.npu_fusion_attention(
        qn, kn, vn, n, "TND", atten_mask=mask.npu(), scale=0.4, sparse_mode=3, actual_seq_qlen=cum_q,
        actual_seq_kvlen=cum_kv)
    assert smax.shape == (sum(lengths_q), n, 8)
    assert numels == n * sum(a * b for a, b in zip(lengths_q, lengths_kv))
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    pieces = []
    qs = ks = 0
    for lq, lk in zip(lengths_q, lengths_kv):
        if lq:
            block = attention(qr[qs:qs + lq].permute(1, 0, 2)[None], kr[ks:ks + lk].permute(1, 0, 2)[None],
                              vr[ks:ks + lk].permute(1, 0, 2)[None], 0.4, mask=sparse_mask(3, lq, lk))[0]
            pieces.append(block[0].permute(1, 0, 2))
        qs, ks = qs + lq, ks + lk
    ref = torch.cat(pieces)
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(ref)
    out.backward(grad.float().npu())
    ref.backward(grad)
    for ours, theirs in ((qn, qr), (kn, kr), (vn, vr)):
        torch.testing.assert_close(ours.grad.cpu().double(), theirs.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_dtype_and_fp32_statistics(dtype):
    q, k, v = make_qkv("BSND", n=2, nkv=2, dtype=dtype)
    qn = q.npu().requires_grad_()
    out, smax, ssum = torch_npu.npu_fusion_attention(qn, k.npu(), v.npu(), 2, "BSND", scale=0.35)[:3]
    assert out.dtype == dtype and smax.dtype == ssum.dtype == torch.float32
    ref = from_bnsd(attention(to_bnsd(q, "BSND", 2), to_bnsd(k, "BSND", 2), to_bnsd(v, "BSND", 2), 0.35)[0], "BSND")
    tol = 1e-2 if dtype == torch.float16 else 3e-2
    torch.testing.assert_close(out.cpu().double(), ref, rtol=tol, atol=tol)
    out.float().sum().backward()
    assert qn.grad.dtype == dtype and torch.isfinite(qn.grad.cpu().float()).all()


def test_gradient_matches_finite_differences():
    q, k, v = make_qkv("BNSD", b=1, n=2, nkv=1, sq=3, skv=4, d=4)
    mask = sparse_mask(3, 3, 4)
    qn = q.npu().requires_grad_()
    out = torch_npu.npu_fusion_attention(qn, k.npu(), v.npu(), 2, "BNSD", atten_mask=mask.npu(), scale=0.7,
                                         sparse_mode=1)[0]
    w, numeric = numeric_grad(lambda x: torch_npu.npu_fusion_attention(
        x.npu(), k.npu(), v.npu(), 2, "BNSD", atten_mask=mask.npu(), scale=0.7, sparse_mode=1)[0].cpu(), q)
    (out * w.float().npu()).sum().backward()
    torch.testing.assert_close(qn.grad.cpu().double(), numeric, rtol=2e-2, atol=2e-3)


def test_explicit_grad_operator_and_softmax_statistics_round_trip():
    n = 2
    q, k, v = make_qkv("BSH", n=n, nkv=n)
    args = [t.npu() for t in (q, k, v)]
    out, smax, ssum, sout, seed, offset, numels = torch_npu.npu_fusion_attention(*args, n, "BSH", scale=0.25)
    dy = torch.randn_like(q)
    with_stats = torch_npu.npu_fusion_attention_grad(*args, dy.npu(), n, "BSH", softmax_max=smax, softmax_sum=ssum,
                                                    attention_in=out, scale_value=0.25, numels=numels)
    recomputed = torch_npu.npu_fusion_attention_grad(*args, dy.npu(), n, "BSH", scale_value=0.25)
    assert len(with_stats) == 5 and with_stats[3] is None
    for a, b in zip(with_stats[:3], recomputed[:3]):
        torch.testing.assert_close(a.cpu(), b.cpu(), rtol=1e-5, atol=1e-6)
    # The log-sum-exp MindSpeed's context-parallel merge uses: m + log(l).
    lse = smax[..., 0] + torch.log(ssum[..., 0])
    ref = torch.logsumexp(to_bnsd(q, "BSH", n) @ to_bnsd(k, "BSH", n).transpose(-2, -1) * 0.25, -1)
    torch.testing.assert_close(lse.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_dropout_bookkeeping_and_a_grad_that_regenerates_the_mask():
    n, s = 2, 5
    torch.manual_seed(3)
    q = torch.randn(1, n, s, s)
    k = torch.randn(1, n, s, s)
    v = torch.eye(s).expand(1, n, s, s).contiguous()  # out = dropped probabilities
    torch.npu.manual_seed(1234)
    qn = q.npu().requires_grad_()
    out, _, _, _, seed, offset, numels = torch_npu.npu_fusion_attention(qn, k.npu(), v.npu(), n, "BNSD",
                                                                        keep_prob=0.5)
    assert (seed, offset, numels) == (1234, 0, n * s * s)
    second = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), n, "BNSD", keep_prob=0.5)
    assert (second[4], second[5]) == (1234, 10)  # the Philox offset advances by 10 per call
    keep = out.detach().cpu() != 0
    assert 0 < keep.float().mean() < 1
    qr = q.double().requires_grad_()
    ref = attention(qr, k, v, 1.0, keep=keep, keep_prob=0.5)[0]
    torch.testing.assert_close(out.cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
    grad = torch.randn(1, n, s, s)
    out.backward(grad.npu())
    ref.backward(grad.double())
    torch.testing.assert_close(qn.grad.cpu().double(), qr.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs,text",
    [
        (dict(head_num=0), "head_num must > 0, but got 0"),
        (dict(input_layout="XYZ"), "The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got XYZ"),
        (dict(input_layout=""), "input_layout is empty"),
        (dict(keep_prob=0.0), "The keep_prob value must be in range of (0, 1], but got 0"),
        (dict(sparse_mode=7), "The sparse_mode value must be in range of [0,6], but got 7"),
        (dict(softmax_layout="BSH"), "only supported softmax_layout=TND"),
        (dict(softmax_layout="TND"), "softmax_layout=TND only supported when input_layout_str=TND"),
    ],
)
def test_documented_errors(kwargs, text):
    q, k, v = make_qkv("BNSD", n=2, nkv=2)
    args = dict(head_num=2, input_layout="BNSD")
    args.update(kwargs)
    with pytest.raises(RuntimeError) as info:
        torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), args.pop("head_num"), args.pop("input_layout"),
                                       **args)
    assert text in str(info.value) and "ERR01001 OPS invalid parameter" in str(info.value)


def test_rank_and_tnd_errors():
    q = torch.randn(2, 3).npu()
    with pytest.raises(RuntimeError, match="The shapes of the input query should be 3 or 4 dimensional, but got "
                                           "2-dimensional"):
        torch_npu.npu_fusion_attention(q, q, q, 1, "BSH")
    t = torch.randn(4, 2, 8).npu()
    with pytest.raises(RuntimeError, match="the size of actual_seq_qlen and actual_seq_kvlen must be the same"):
        torch_npu.npu_fusion_attention(t, t, t, 2, "TND", actual_seq_qlen=[4])
    with pytest.raises(RuntimeError, match=r"The sparse_mode value must be in range of \[0,5\) or \(5,8\], but got 5"):
        torch_npu.npu_fusion_attention(t, t, t, 2, "TND", sparse_mode=5, actual_seq_qlen=[4], actual_seq_kvlen=[4])


def test_cpu_tensors_are_rejected_by_the_dispatcher():
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(NotImplementedError, match="npu::npu_fusion_attention"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BNSD")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device. Expected NPU tensor"):
        torch_npu.npu_fusion_attention(q.npu(), q.npu(), q.npu(), 2, "BNSD", atten_mask=torch.zeros(4, 4).bool())


def test_estimate_only_shapes_and_meta_kernel():
    with npusim.estimate():
        with torch.device("npu"):
            q = torch.empty(2, 1024, 32 * 128, dtype=torch.bfloat16, requires_grad=True)
            kv = torch.empty(2, 1024, 8 * 128, dtype=torch.bfloat16, requires_grad=True)
        out, smax, ssum, _, _, _, numels = torch_npu.npu_fusion_attention(q, kv, kv, 32, "BSH", scale=0.088)
        assert out.shape == q.shape and out.device.type == "npu"
        assert smax.shape == (2, 32, 1024, 8) and numels == 2 * 32 * 1024 * 1024
        out.sum().backward()
        assert q.grad.shape == q.shape and kv.grad.shape == kv.shape
    meta = torch.empty(1, 2, 16, 8, device="meta")
    out = torch.ops.npu.npu_fusion_attention(meta, meta, meta, 2, "BNSD")
    assert out[0].device.type == "meta" and out[1].shape == (1, 2, 16, 8)


def test_torch_deprecation_stub_and_exports():
    assert torch_npu.npu_fusion_attention is torch.ops.npu.npu_fusion_attention
    assert "npu_fusion_attention" in torch_npu.__all__
    with pytest.raises(RuntimeError, match="torch.npu_fusion_attention is deprecated and will be removed in future "
                                           "version. Use torch_npu.npu_fusion_attention instead."):
        torch.npu_fusion_attention()

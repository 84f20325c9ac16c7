"""npu_grouped_matmul, the MoE token permute/unpermute pair and routing ops, the fused Adam/AdamW
kernels and torch_npu.optim, npu_scaled_masked_softmax, npu_cross_entropy_loss,
npu_confusion_transpose, sign-bit packing, npu_dynamic_quant, against plain-PyTorch references."""

import pytest
import torch

import npusim
import torch_npu
import torch_npu.optim


def leaf(t):
    return t.npu().requires_grad_()


# ---------------------------------------------------------------- grouped matmul


def test_grouped_matmul_moe_training_pattern():
    """LLaMA-Factory's GmmFunction: forward split M, dX with transposed weights, dW split K."""
    torch.manual_seed(0)
    counts = torch.tensor([3, 0, 4, 2])
    x = torch.randn(9, 5)
    w = torch.randn(4, 5, 6)
    dy = torch.randn(9, 6)
    y = torch_npu.npu_grouped_matmul([x.npu()], [w.npu()], group_list=counts.npu(), group_list_type=1, group_type=0,
                                     split_item=2)[0]
    rows = torch.repeat_interleave(torch.arange(4), counts)
    ref = torch.einsum("mk,mkn->mn", x, w[rows])
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-5, atol=1e-5)
    dx = torch_npu.npu_grouped_matmul([dy.npu()], [w.transpose(1, 2).contiguous().npu()], group_list=counts.npu(),
                                      group_list_type=1, group_type=0, split_item=2)[0]
    torch.testing.assert_close(dx.cpu(), torch.einsum("mn,mkn->mk", dy, w[rows]), rtol=1e-5, atol=1e-5)
    dw = torch_npu.npu_grouped_matmul([x.t().contiguous().npu()], [dy.npu()], group_list=counts.npu(),
                                      group_type=2, split_item=3, group_list_type=1)[0]
    ref_dw = torch.stack([x[rows == e].t() @ dy[rows == e] for e in range(4)])
    assert dw.shape == (4, 5, 6)
    torch.testing.assert_close(dw.cpu(), ref_dw, rtol=1e-5, atol=1e-5)
    cumulative = torch_npu.npu_grouped_matmul([x.npu()], [w.npu()], group_list=counts.cumsum(0).npu(),
                                              group_type=0, split_item=2)[0]
    torch.testing.assert_close(cumulative.cpu(), y.cpu())


def test_grouped_matmul_lists_bias_activation_and_errors():
    torch.manual_seed(1)
    xs = [torch.randn(3, 4).half(), torch.randn(2, 5).half()]
    ws = [torch.randn(4, 6).half(), torch.randn(5, 6).half()]
    bs = [torch.randn(6).half(), torch.randn(6).half()]
    out = torch_npu.npu_grouped_matmul([t.npu() for t in xs], [t.npu() for t in ws], bias=[t.npu() for t in bs],
                                       act_type=5)
    assert len(out) == 2
    for o, x, w, b in zip(out, xs, ws, bs):
        torch.testing.assert_close(o.cpu().float(), torch.nn.functional.silu(x.float() @ w.float() + b.float()),
                                   rtol=5e-3, atol=5e-3)
    with pytest.raises(RuntimeError, match=r"(?s)group_type only supports -1, 0 and 2, but got 1.*ERR01003"):
        torch_npu.npu_grouped_matmul([xs[0].npu()], [ws[0].npu()], group_type=1)


# ---------------------------------------------------------------- token permute / unpermute


def reference_permute(tokens, indices, num_out=None):
    topk = indices.shape[1] if indices.dim() == 2 else 1
    flat = indices.reshape(-1)
    order = torch.argsort(flat, stable=True)
    kept = flat.numel() if not num_out else min(num_out, flat.numel())
    return tokens[order[:kept] // topk], torch.argsort(order).int()


@pytest.mark.parametrize("topk,num_out", [(1, None), (2, None), (2, 5)])
def test_token_permute_unpermute_forward_backward(topk, num_out):
    torch.manual_seed(2)
    tokens = torch.randn(4, 3)
    indices = torch.randint(0, 3, (4, topk)) if topk > 1 else torch.randint(0, 3, (4,))
    probs = torch.rand(4, topk)
    tn = leaf(tokens)
    permuted, row_id_map = torch_npu.npu_moe_token_permute(tn, indices.npu(), num_out_tokens=num_out)
    ref_permuted, ref_map = reference_permute(tokens, indices, num_out)
    assert row_id_map.dtype == torch.int32
    torch.testing.assert_close(permuted.cpu(), ref_permuted)
    torch.testing.assert_close(row_id_map.cpu(), ref_map)
    pn = leaf(probs)
    restored = torch_npu.npu_moe_token_unpermute(permuted, row_id_map, pn if topk > 1 else None)
    # Reference: out[t] = sum_k probs[t,k] * permuted[row_id_map[t*K+k]] (dropped slots give 0).
    tr, pr = tokens.double().requires_grad_(), probs.double().requires_grad_()
    perm_r = reference_permute(tr, indices, num_out)[0]
    rows = ref_map.long().view(4, topk)
    padded = torch.cat([perm_r, torch.zeros(1, 3, dtype=torch.float64)])
    gathered = padded[rows.clamp(max=perm_r.shape[0])]
    ref = (gathered * (pr.unsqueeze(-1) if topk > 1 else 1)).sum(1)
    torch.testing.assert_close(restored.cpu().double(), ref.detach(), rtol=1e-6, atol=1e-6)
    grad = torch.randn(4, 3)
    restored.backward(grad.npu())
    ref.backward(grad.double())
    torch.testing.assert_close(tn.grad.cpu().double(), tr.grad, rtol=1e-5, atol=1e-6)
    if topk > 1:
        torch.testing.assert_close(pn.grad.cpu().double(), pr.grad, rtol=1e-5, atol=1e-6)


def test_token_permute_errors():
    with pytest.raises(RuntimeError, match="The dims of input tokens should be 2 dimensional, but got 3-dimensional."):
        torch_npu.npu_moe_token_permute(torch.randn(1, 2, 3).npu(), torch.zeros(2, dtype=torch.long).npu())


def test_moe_inference_routing():
    torch.manual_seed(3)
    logits = torch.randn(5, 4)
    y, experts, row_idx = torch_npu.npu_moe_gating_top_k_softmax(logits.npu(), None, k=2)
    ref_y, ref_e = torch.softmax(logits, -1).topk(2, -1)
    torch.testing.assert_close(y.cpu(), ref_y)
    assert experts.dtype == torch.int32 and torch.equal(experts.cpu().long(), ref_e)
    assert torch.equal(row_idx.cpu(), torch.arange(10, dtype=torch.int32).reshape(2, 5).t())
    x = torch.randn(5, 3)
    expanded, expanded_row, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x.npu(), experts, active_num=10, expert_num=4, expert_tokens_num_flag=True, expert_tokens_num_type=1)
    order = torch.argsort(experts.cpu().reshape(-1), stable=True)
    torch.testing.assert_close(expanded.cpu(), x[order // 2])
    assert torch.equal(expanded_row.cpu(), torch.argsort(order).int())
    assert torch.equal(counts.cpu(), torch.bincount(experts.cpu().reshape(-1).long(), minlength=4))
    src_to_dst = expanded_row.cpu().reshape(5, 2).t().reshape(-1)  # k-major map for finalize
    skip = torch.randn(5, 3)
    out = torch_npu.npu_moe_finalize_routing(expanded, skip.npu(), None, None, y, src_to_dst.npu(), None,
                                             drop_pad_mode=0, k=2)
    torch.testing.assert_close(out.cpu(), skip + (x.unsqueeze(1) * y.cpu().unsqueeze(-1)).sum(1), rtol=1e-5,
                               atol=1e-5)


# ---------------------------------------------------------------- fused Adam / AdamW


@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, False), (False, True)])
def test_apply_adam_w_out_matches_torch_adamw(amsgrad, maximize):
    torch.manual_seed(4)
    param = torch.randn(7)
    reference = param.clone().requires_grad_()
    optimizer = torch.optim.AdamW([reference], lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1,
                                  amsgrad=amsgrad, maximize=maximize)
    var, m, v = param.npu(), torch.zeros(7).npu(), torch.zeros(7).npu()
    max_v = torch.zeros(7).npu()
    for step in range(1, 4):
        grad = torch.randn(7)
        reference.grad = grad.clone()
        optimizer.step()
        result = torch_npu.npu_apply_adam_w(0.8 ** (step - 1), 0.9 ** (step - 1), 0.01, 0.1, 0.8, 0.9, 1e-6,
                                            grad.npu(), max_v if amsgrad else None, amsgrad, maximize,
                                            out=(var, m, v))
        assert result[0] is var
        assert var._version == m._version == v._version == step  # in-place: version counters bumped
        if amsgrad:
            torch.maximum(max_v, v, out=max_v)
    torch.testing.assert_close(var.cpu(), reference.detach(), rtol=1e-6, atol=1e-6)


def test_apply_adam_tf_semantics_and_functional_error():
    torch.manual_seed(5)
    var, m, v = torch.randn(5), torch.randn(5), torch.rand(5)
    grad = torch.randn(5)
    b1, b2, lr, eps, b1p, b2p = 0.9, 0.99, 0.1, 1e-8, 0.9 ** 3, 0.99 ** 3
    outs = [t.npu() for t in (var, m, v)]
    torch_npu.npu_apply_adam(b1p, b2p, lr, b1, b2, eps, grad.npu(), False, False, out=outs)
    lr_t = lr * (1 - b2p) ** 0.5 / (1 - b1p)
    m_ref = m + (grad - m) * (1 - b1)
    v_ref = v + (grad * grad - v) * (1 - b2)
    torch.testing.assert_close(outs[0].cpu(), var - lr_t * m_ref / (v_ref.sqrt() + eps))
    with pytest.raises(RuntimeError, match="npu_apply_adam_w is not implemented for Tensor"):
        torch_npu.npu_apply_adam_w(1, 1, 0.1, 0, 0.9, 0.99, 1e-8, grad.npu(), None, False, False)
    with pytest.raises(RuntimeError, match="if amsgrad is true, max_gard_norm input must be entered"):
        torch_npu.npu_apply_adam_w(1, 1, 0.1, 0, 0.9, 0.99, 1e-8, grad.npu(), None, True, False, out=outs)


@pytest.mark.parametrize("name,reference", [("NpuFusedAdamW", torch.optim.AdamW), ("NpuFusedAdam", torch.optim.Adam)])
def test_torch_npu_optim_matches_torch_optim(name, reference):
    torch.manual_seed(6)
    model = torch.nn.Linear(4, 3)
    ours = torch.nn.Linear(4, 3).npu()
    ours.load_state_dict(model.state_dict())
    opt_ref = reference(model.parameters(), lr=0.05, weight_decay=0.05)
    opt = getattr(torch_npu.optim, name)(ours.parameters(), lr=0.05, weight_decay=0.05)
    for _ in range(3):
        x = torch.randn(8, 4)
        for module, optimizer, data in ((model, opt_ref, x), (ours, opt, x.npu())):
            optimizer.zero_grad()
            module(data).square().mean().backward()
            optimizer.step()
    for a, b in zip(model.parameters(), ours.parameters()):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- softmax, loss, layout, bits


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3)])
def test_scaled_masked_softmax(dtype, tol):
    torch.manual_seed(7)
    x = torch.randn(2, 2, 32, 64).to(dtype)
    mask = torch.rand(2, 1, 32, 64) < 0.2
    xn = leaf(x)
    y = torch_npu.npu_scaled_masked_softmax(xn, mask.npu(), 0.5)
    xr = x.double().requires_grad_()
    ref = torch.softmax((xr * 0.5).masked_fill(mask, -10000.0), -1)
    torch.testing.assert_close(y.cpu().double(), ref.detach(), rtol=tol, atol=tol)
    grad = torch.randn(2, 2, 32, 64)
    y.backward(grad.to(dtype).npu())
    ref.backward(grad.to(dtype).double())
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=10 * tol, atol=10 * tol)
    with pytest.raises(RuntimeError, match=r"H and W of x must be in \[32, 4096\] and multiples of 32"):
        torch_npu.npu_scaled_masked_softmax(torch.randn(1, 1, 8, 8).npu(), torch.zeros(1, 1, 8, 8).bool().npu())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_loss(reduction):
    torch.manual_seed(8)
    x = torch.randn(6, 5)
    target = torch.randint(0, 5, (6,))
    xn = leaf(x)
    loss, log_prob, zloss, lse = torch_npu.npu_cross_entropy_loss(xn, target.npu(), reduction=reduction)
    xr = x.double().requires_grad_()
    ref = torch.nn.functional.cross_entropy(xr, target, reduction=reduction)
    assert loss.shape == ((6,) if reduction == "none" else (1,))
    torch.testing.assert_close(loss.cpu().double().reshape(ref.shape), ref.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(log_prob.cpu().double(), torch.log_softmax(x.double(), 1), rtol=1e-5, atol=1e-6)
    assert zloss.numel() == 0 and lse.numel() == 0
    grad = torch.rand(loss.shape)
    loss.backward(grad.npu())
    ref.backward(grad.double().reshape(ref.shape))
    torch.testing.assert_close(xn.grad.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)


def test_cross_entropy_weight_ignore_index_smoothing_forward_and_backward_operator():
    torch.manual_seed(9)
    x = torch.randn(6, 5)
    target = torch.tensor([0, 1, -100, 3, 4, 1])
    weight = torch.rand(5) + 0.1
    loss, log_prob, _, _ = torch_npu.npu_cross_entropy_loss(x.npu(), target.npu(), weight.npu(), "mean",
                                                            label_smoothing=0.1)
    ref = torch.nn.functional.cross_entropy(x, target, weight, label_smoothing=0.1)
    torch.testing.assert_close(loss.cpu()[0], ref, rtol=1e-5, atol=1e-6)
    xr = x.double().requires_grad_()
    torch.nn.functional.cross_entropy(xr, target, weight.double(), label_smoothing=0.1).backward()
    dx = torch_npu.npu_cross_entropy_loss_backward(torch.ones(1).npu(), log_prob, target.npu(), weight.npu(),
                                                   reduction="mean", label_smoothing=0.1)
    torch.testing.assert_close(dx.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transpose_first", [True, False])
def test_confusion_transpose(transpose_first):
    torch.manual_seed(10)
    x = torch.randn(2, 3, 4, 5) if transpose_first else torch.randn(2, 3, 20)
    perm, shape = ([0, 2, 1, 3], [2, 4, 15]) if transpose_first else ([0, 2, 1, 3], [2, 3, 4, 5])
    xn = leaf(x)
    y = torch_npu.npu_confusion_transpose(xn, perm, shape, transpose_first)
    xr = x.clone().requires_grad_()
    ref = xr.permute(perm).reshape(shape) if transpose_first else xr.reshape(shape).permute(perm)
    torch.testing.assert_close(y.cpu(), ref.detach())
    assert y.is_contiguous()
    grad = torch.randn(ref.shape)
    y.backward(grad.npu())
    ref.backward(grad)
    torch.testing.assert_close(xn.grad.cpu(), xr.grad)


def test_sign_bits_pack_unpack():
    x = torch.tensor([1.0, -2.0, 0.0, -0.5, 3.0, 3.0, -1.0, 2.0, -4.0, 5.0])
    packed = torch_npu.npu_sign_bits_pack(x.npu(), 1)
    # bit i of byte j is x[8j+i] >= 0; the tail is padded with bits 0.
    assert packed.dtype == torch.uint8 and packed.cpu().tolist() == [[0b10110101, 0b00000010]]
    unpacked = torch_npu.npu_sign_bits_unpack(packed, 2, torch.float16)
    assert unpacked.shape == (2, 8) and unpacked.dtype == torch.float16
    assert unpacked.cpu().reshape(-1)[:10].tolist() == [1, -1, 1, -1, 1, 1, -1, 1, -1, 1]


def test_dynamic_quant():
    torch.manual_seed(11)
    x = torch.randn(4, 16).half()
    y, scale = torch_npu.npu_dynamic_quant(x.npu())
    ref_scale = x.float().abs().amax(-1) / 127
    torch.testing.assert_close(scale.cpu(), ref_scale)
    assert y.dtype == torch.int8
    torch.testing.assert_close(y.cpu(), torch.round(x.float() / ref_scale[:, None]).clamp(-128, 127).to(torch.int8))


def test_estimate_only_moe_and_optimizer():
    with npusim.estimate():
        with torch.device("npu"):
            x = torch.empty(4096, 1024, dtype=torch.bfloat16)
            w = torch.empty(8, 1024, 2048, dtype=torch.bfloat16)
            counts = torch.empty(8, dtype=torch.long)
            idx = torch.empty(2048, 2, dtype=torch.long)
            param = torch.empty(1 << 20)
        y = torch_npu.npu_grouped_matmul([x], [w], group_list=counts, group_list_type=1, group_type=0, split_item=2)
        assert y[0].shape == (4096, 2048)
        permuted, row_map = torch_npu.npu_moe_token_permute(x[:2048], idx)
        assert permuted.shape == (4096, 1024) and row_map.shape == (4096,)
        torch_npu.npu_apply_adam_w(1, 1, 1e-3, 0.0, 0.9, 0.99, 1e-8, param, None, False, False,
                                   out=(param, param, param))

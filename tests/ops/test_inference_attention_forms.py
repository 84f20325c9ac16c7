"""torch_npu's fused inference attention forms (out=, workspace and output allocators, v2) and
ATB's paged attention, against plain PyTorch references."""

import pytest
import torch

import npusim  # noqa: F401
import torch_npu
from ops_reference import attention


def qkv(b=2, n=4, nkv=2, sq=1, skv=7, d=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(3)
    return (torch.randn(b, n, sq, d, generator=g, dtype=dtype), torch.randn(b, nkv, skv, d, generator=g, dtype=dtype),
            torch.randn(b, nkv, skv, d, generator=g, dtype=dtype))


def test_v2_matches_reference_and_v1_with_valid_lengths():
    q, k, v = qkv()
    scale = 0.4
    out, lse = torch_npu.npu_fused_infer_attention_score_v2(
        q.npu(), k.npu(), v.npu(), num_query_heads=4, num_key_value_heads=2, softmax_scale=scale,
        input_layout="BNSD", actual_seq_kvlen=[3, 7], return_softmax_lse=True)
    for b, length in enumerate([3, 7]):
        ref, m, total = attention(q[b:b + 1], k[b:b + 1, :, :length], v[b:b + 1, :, :length], scale)
        torch.testing.assert_close(out.cpu()[b:b + 1].double(), ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lse.cpu()[b:b + 1, ..., 0].double(), m + torch.log(total), rtol=1e-5, atol=1e-5)
    v1_out, v1_lse = torch_npu.npu_fused_infer_attention_score(
        q.npu(), k.npu(), v.npu(), num_heads=4, num_key_value_heads=2, scale=scale, input_layout="BNSD",
        actual_seq_lengths_kv=[3, 7], softmax_lse_flag=True)
    torch.testing.assert_close(out.cpu(), v1_out.cpu())
    torch.testing.assert_close(lse.cpu(), v1_lse.cpu())
    with pytest.raises(RuntimeError, match="learnable_sink is not supported"):
        torch_npu.npu_fused_infer_attention_score_v2(q.npu(), k.npu(), v.npu(), num_query_heads=4,
                                                     num_key_value_heads=2, input_layout="BNSD",
                                                     learnable_sink=torch.zeros(4).npu())


@pytest.mark.parametrize("v2", [False, True])
def test_out_form_writes_what_the_functional_form_returns(v2):
    q, k, v = qkv(dtype=torch.float16)
    if v2:
        kwargs = dict(num_query_heads=4, num_key_value_heads=2, softmax_scale=0.3, input_layout="BNSD",
                      actual_seq_kvlen=[5, 2])
        op, workspace_op, output_op = (torch_npu.npu_fused_infer_attention_score_v2,
                                       torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace,
                                       torch_npu._npu_fused_infer_attention_score_v2_infer_output)
        shape_kwargs = dict(num_query_heads=4, num_key_value_heads=2, input_layout="BNSD")
    else:
        kwargs = dict(num_heads=4, num_key_value_heads=2, scale=0.3, input_layout="BNSD",
                      actual_seq_lengths_kv=[5, 2])
        op, workspace_op, output_op = (torch_npu.npu_fused_infer_attention_score,
                                       torch_npu._npu_fused_infer_attention_score_get_max_workspace,
                                       torch_npu._npu_fused_infer_attention_score_infer_output)
        shape_kwargs = dict(num_heads=4, num_key_value_heads=2, input_layout="BNSD")
    expected, _ = op(q.npu(), k.npu(), v.npu(), **kwargs)
    workspace = workspace_op(q.npu(), k.npu(), v.npu(), **kwargs)
    assert workspace.device.type == "npu" and workspace.dtype == torch.uint8 and workspace.numel() >= 16 << 20
    output, lse = output_op(q.npu(), v.npu(), **shape_kwargs)
    assert output.shape == (2, 4, 1, 8) and output.dtype == torch.float16 and lse.shape == (1,)
    returned = op.out(q.npu(), k.npu(), v.npu(), workspace=workspace, out=[output, lse], **kwargs)
    assert returned[0] is output and returned[1] is lse
    torch.testing.assert_close(output.cpu(), expected.cpu(), rtol=0, atol=0)
    assert lse.cpu().item() == 0
    with pytest.raises(RuntimeError, match="the workspace has 16 bytes"):
        op.out(q.npu(), k.npu(), v.npu(), workspace=workspace[:16], out=[output, lse], **kwargs)
    with pytest.raises(RuntimeError, match="attention_out has shape"):
        op.out(q.npu(), k.npu(), v.npu(), out=[output[:1], lse], **kwargs)


def paged_reference(query, key_cache, value_cache, block_table, context_lens, scale):
    """Gathers each sequence's keys and values position by position, then plain attention."""
    block_size = key_cache.shape[1]
    rows = []
    for i, length in enumerate(context_lens.tolist()):
        positions = torch.arange(length)
        blocks = block_table[i].long()[positions // block_size]
        keys = key_cache[blocks, positions % block_size]  # [len, kv_heads, d]
        values = value_cache[blocks, positions % block_size]
        out, _, _ = attention(query[i:i + 1].unsqueeze(2), keys.permute(1, 0, 2).unsqueeze(0),
                              values.permute(1, 0, 2).unsqueeze(0), scale)
        rows.append(out[0, :, 0])
    return torch.stack(rows)


def paged_inputs(tokens=3, heads=4, kv_heads=2, d=16, dv=8, blocks=6, block_size=4, max_blocks=3):
    g = torch.Generator().manual_seed(7)
    query = torch.randn(tokens, heads, d, generator=g)
    key_cache = torch.randn(blocks, block_size, kv_heads, d, generator=g)
    value_cache = torch.randn(blocks, block_size, kv_heads, dv, generator=g)
    block_table = torch.randint(0, blocks, (tokens, max_blocks), generator=g, dtype=torch.int32)
    return query, key_cache, value_cache, block_table


def test_paged_attention_matches_reference_with_gqa():
    query, key_cache, value_cache, block_table = paged_inputs()
    context_lens = torch.tensor([5, 12, 1], dtype=torch.int32)
    out = torch.zeros(3, 4, 8).npu()
    torch_npu._npu_paged_attention(query=query.npu(), key_cache=key_cache.npu(), value_cache=value_cache.npu(),
                                   num_kv_heads=2, num_heads=4, scale_value=0.25, block_table=block_table.npu(),
                                   context_lens=context_lens, out=out)
    expected = paged_reference(query, key_cache, value_cache, block_table, context_lens, 0.25)
    torch.testing.assert_close(out.cpu().double(), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="needs 4 blocks, but block_table holds 3"):
        torch_npu._npu_paged_attention(query.npu(), key_cache.npu(), value_cache.npu(), 2, 4, 0.25,
                                       block_table.npu(), torch.tensor([5, 13, 1], dtype=torch.int32), out)
    with pytest.raises(RuntimeError, match="multiple of num_kv_heads"):
        torch_npu._npu_paged_attention(query.npu(), key_cache.npu(), value_cache.npu(), 3, 4, 0.25,
                                       block_table.npu(), context_lens, out)


def test_estimate_only_mode_shapes():
    with npusim.estimate():
        query = torch.empty(2, 4, 16, device="npu")
        key_cache = torch.empty(6, 4, 2, 16, device="npu")
        value_cache = torch.empty(6, 4, 2, 8, device="npu")
        out = torch.empty(2, 4, 8, device="npu")
        torch_npu._npu_paged_attention(query, key_cache, value_cache, 2, 4, 0.3,
                                       torch.zeros(2, 3, dtype=torch.int32, device="npu"),
                                       torch.tensor([5, 9], dtype=torch.int32), out)
        q = torch.empty(2, 4, 1, 8, device="npu")
        k = torch.empty(2, 2, 6, 8, device="npu")
        attention_out, lse = torch_npu.npu_fused_infer_attention_score_v2(
            q, k, k, num_query_heads=4, num_key_value_heads=2, input_layout="BNSD", return_softmax_lse=True)
        assert attention_out.shape == (2, 4, 1, 8) and lse.shape == (2, 4, 1, 1)

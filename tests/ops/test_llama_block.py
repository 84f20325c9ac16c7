"""A LLaMA block written the MindSpeed way (fused RMSNorm, rotary, fusion attention, SwiGLU,
torch_npu.optim.NpuFusedAdamW) trains on npu exactly like the plain-PyTorch block on the CPU; the
fused operators appear in the reports, and the estimate of a LLaMA-2-7B layer written with them is
lower than the unfused one."""

import pytest
import torch

import npusim
import torch_npu
import torch_npu.optim
from llama_blocks import FusedLlamaBlock, PlainLlamaBlock


def test_mindspeed_style_block_trains_like_the_plain_block():
    torch.manual_seed(0)
    plain = PlainLlamaBlock()
    fused = FusedLlamaBlock()
    fused.load_state_dict(plain.state_dict())
    fused = fused.npu()
    opt_plain = torch.optim.AdamW(plain.parameters(), lr=1e-2)
    opt_fused = torch_npu.optim.NpuFusedAdamW(fused.parameters(), lr=1e-2)
    losses = []
    x = torch.randn(2, 12, 32)
    target = torch.randn(2, 12, 32)
    for step in range(4):
        pair = []
        for block, optimizer, data, goal in ((plain, opt_plain, x, target), (fused, opt_fused, x.npu(), target.npu())):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(block(data), goal)
            loss.backward()
            optimizer.step()
            pair.append(loss.item())
        losses.append(pair)
        assert pair[1] == pytest.approx(pair[0], rel=1e-4, abs=1e-5), (step, pair)
    assert losses[-1][1] < losses[0][1]  # it trains
    for (name, a), b in zip(plain.named_parameters(), fused.parameters()):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=1e-4, atol=1e-5, msg=name)


def test_fused_operators_appear_in_the_reports():
    npusim.reset_performance_report()
    npusim.reset_placement_report()
    block = FusedLlamaBlock().npu()
    block(torch.randn(1, 8, 32, device="npu")).sum().backward()
    report = npusim.performance_report()
    assert "npu::npu_fusion_attention_grad" in [name for name, _ in report["top_operators"]]
    operators = npusim.placement_report()["operators"]
    for op in ("npu::npu_fusion_attention", "npu::npu_fusion_attention_grad", "npu::npu_rms_norm",
               "npu::npu_rms_norm_backward", "npu::npu_swiglu", "npu::npu_swiglu_backward", "npu::npu_rotary_mul",
               "npu::npu_rotary_mul_backward"):
        counts = operators[op]
        assert counts["ai_core"] >= 1 and counts["cpu_fallback"] == 0 and counts["device_ns"] > 0, (op, counts)


def layer_estimate(block_cls, batch=1, seq=4096):
    """Simulated seconds of one forward+backward LLaMA-2-7B decoder layer (bf16)."""
    npusim.reset_performance_report()
    with npusim.estimate():
        with torch.device("npu"):
            block = block_cls(hidden=4096, heads=32, kv_heads=32, intermediate=11008).to(torch.bfloat16)
            x = torch.empty(batch, seq, 4096, dtype=torch.bfloat16, requires_grad=True)
        block(x).sum().backward()
        torch.npu.synchronize()
    return npusim.performance_report()


def test_llama2_7b_layer_estimate_is_lower_with_the_fused_operators():
    fused = layer_estimate(FusedLlamaBlock)
    plain = layer_estimate(PlainLlamaBlock)
    assert fused["elapsed_s"] < plain["elapsed_s"]
    # Fewer launches (one kernel per fused operator) and less vector time (one pass through HBM).
    assert fused["launches"] < plain["launches"]
    assert fused["busy_s"]["vector"] < plain["busy_s"]["vector"]

"""scaled_dot_product_attention on npu takes the fused path (as torch_npu's fusion attention), with
results equal to the CPU's fused kernel, and is priced as one attention kernel."""

import pytest
import torch
import torch.nn.functional as F

import npusim


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_equals_cpu_forward_and_backward(causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.sum().backward()
    npu = [t.detach().npu().requires_grad_() for t in (q, k, v)]
    out_npu = F.scaled_dot_product_attention(*npu, is_causal=causal)
    out_npu.sum().backward()
    assert torch.equal(out, out_npu.cpu())
    for cpu_tensor, npu_tensor in zip((q, k, v), npu):
        assert torch.equal(cpu_tensor.grad, npu_tensor.grad.cpu())


def test_fused_attention_is_one_kernel_without_a_score_matrix():
    q = torch.randn(1, 8, 1024, 64, device="npu", dtype=torch.float16)
    torch.npu.synchronize()
    npusim.reset_placement_report()
    npusim.reset_performance_report()
    before = torch.npu.memory_allocated()
    torch.npu.reset_peak_memory_stats()
    F.scaled_dot_product_attention(q, q, q, is_causal=True)
    operators = npusim.placement_report()["operators"]
    assert "aten::bmm" not in operators and "aten::_softmax" not in operators
    assert npusim.performance_report()["launches"] == 1
    # No 8 x 1024 x 1024 score matrix (32 MiB in fp32) was ever allocated.
    assert torch.npu.max_memory_allocated() - before < 8 << 20

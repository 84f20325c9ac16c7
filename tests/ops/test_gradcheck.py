"""torch.autograd.gradcheck in float32 (npusim turns float64 npu tensors into float32, so the
numerical Jacobian is taken in float32 with loose tolerances) for the differentiable operators."""

import pytest
import torch

import torch_npu

CHECK = dict(eps=1e-3, atol=2e-2, rtol=2e-2, nondet_tol=1e-6)


def inputs(*shapes, seed=0):
    torch.manual_seed(seed)
    return [torch.randn(shape).npu().requires_grad_() for shape in shapes]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "name,fn,shapes",
    [
        ("rms_norm", lambda x, g: torch_npu.npu_rms_norm(x, g)[0], [(2, 4), (4,)]),
        ("rotary_half", lambda x, c, s: torch_npu.npu_rotary_mul(x, c, s), [(1, 2, 1, 4), (1, 2, 1, 4), (1, 2, 1, 4)]),
        ("rotary_interleave", lambda x, c, s: torch_npu.npu_rotary_mul(x, c, s, "interleave"),
         [(1, 2, 1, 4), (1, 2, 1, 4), (1, 2, 1, 4)]),
        ("swiglu", lambda x: torch_npu.npu_swiglu(x), [(2, 6)]),
        ("geglu", lambda x: torch_npu.npu_geglu(x, approximate=0)[0], [(2, 6)]),
        ("gelu", lambda x: torch_npu.npu_gelu(x, approximate="tanh"), [(3, 3)]),
        ("fast_gelu", lambda x: torch_npu.npu_fast_gelu(x), [(3, 3)]),
        ("confusion_transpose", lambda x: torch_npu.npu_confusion_transpose(x, [1, 0, 2], [3, 4], True),
         [(2, 3, 2)]),
        ("fusion_attention", lambda q, k, v: torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.5)[0],
         [(1, 2, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4)]),
    ],
)
def test_gradcheck_float32(name, fn, shapes):
    assert torch.autograd.gradcheck(fn, inputs(*shapes), **CHECK)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gradcheck_cross_entropy_and_unpermute():
    x = inputs((3, 4))[0]
    target = torch.tensor([0, 3, 1]).npu()
    assert torch.autograd.gradcheck(lambda t: torch_npu.npu_cross_entropy_loss(t, target)[0], [x], **CHECK)
    tokens, probs = inputs((3, 2), (3, 2), seed=1)
    indices = torch.tensor([[0, 1], [1, 2], [0, 2]]).npu()

    def moe(t, p):
        permuted, row_map = torch_npu.npu_moe_token_permute(t, indices)
        return torch_npu.npu_moe_token_unpermute(permuted * 2, row_map, p)

    assert torch.autograd.gradcheck(moe, [tokens, probs], **CHECK)

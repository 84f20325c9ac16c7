"""fp32 composites of torch_npu's fused operators: the benchmark's version of each.

On a real setup msprobe's benchmark device (a GPU or the CPU) has no torch_npu kernels, so
msprobe computes them from their definitions (its ``bench_functions``); npusim does the same
for the CPU benchmark run, and the explanation uses the composite as the "fused kernel off"
version of an operator. Each composite is the operator's documented formula written with
PyTorch operators in float32 (autograd works through it), cast back to the input dtype as the
fused kernel returns it. Operators without a composite raise a clear error in the benchmark.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["COMPOSITES", "composite_for", "missing_composite"]


def _float(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.float() if tensor.is_floating_point() and tensor.dtype != torch.float64 else tensor


def npu_rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    xf = _float(x)
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    rstd = torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + epsilon)
    return (xf * rstd * _float(gamma)).to(x.dtype), rstd


def npu_add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    total = (_float(x1) + _float(x2)).to(x1.dtype)
    y, rstd = npu_rms_norm(total, gamma, epsilon)
    return y, rstd, total


def _rotate(x: torch.Tensor, interleave: bool) -> torch.Tensor:
    if interleave:
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).reshape(x.shape)
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def npu_rotary_mul(x: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half",
                   rotate: torch.Tensor | None = None):
    if rotary_mode not in ("half", "interleave"):
        raise ValueError(f"The rotary_mode of npu_rotary_mul should be half or interleave, but got {rotary_mode}")
    xf = _float(x)
    rotated = torch.matmul(xf, _float(rotate)) if rotate is not None else _rotate(xf, rotary_mode == "interleave")
    return (xf * _float(r1) + rotated * _float(r2)).to(x.dtype)


def npu_swiglu(x: torch.Tensor, dim: int = -1):
    first, second = _float(x).chunk(2, dim=dim)
    return (F.silu(first) * second).to(x.dtype)


def npu_geglu(x: torch.Tensor, dim: int = -1, approximate: int = 1, activate_left: bool = False):
    first, second = _float(x).chunk(2, dim=dim)
    gated, other = (first, second) if activate_left else (second, first)
    gelu = F.gelu(gated, approximate="tanh" if approximate == 1 else "none")
    return (other * gelu).to(x.dtype), gelu.to(x.dtype)


def npu_gelu(x: torch.Tensor, *, approximate: str = "none"):
    return F.gelu(_float(x), approximate=approximate).to(x.dtype)


def npu_fast_gelu(x: torch.Tensor):
    xf = _float(x)
    return (xf * torch.sigmoid(1.702 * xf)).to(x.dtype)


def npu_scaled_masked_softmax(x: torch.Tensor, mask: torch.Tensor, scale: float = 1.0,
                              fixed_triu_mask: bool = False):
    if fixed_triu_mask:
        rows, columns = x.shape[-2], x.shape[-1]
        mask = torch.ones(rows, columns, dtype=torch.bool, device=x.device).triu(1)
    logits = (_float(x) * scale).masked_fill(mask.bool(), -10000.0)
    return torch.softmax(logits, dim=-1).to(x.dtype)


def npu_confusion_transpose(x: torch.Tensor, perm: list[int], shape: list[int], transpose_first: bool):
    if transpose_first:
        return x.permute(*perm).reshape(*shape)
    return x.reshape(*shape).permute(*perm)


def npu_cross_entropy_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
                           reduction: str = "mean", ignore_index: int = -100, label_smoothing: float = 0.0,
                           lse_square_scale_for_zloss: float = 0.0, return_zloss: bool = False):
    if lse_square_scale_for_zloss != 0.0 or return_zloss:
        raise NotImplementedError("npu_cross_entropy_loss's zloss has no composite (nor an npusim kernel)")
    log_prob = torch.log_softmax(_float(input), dim=1)
    loss = F.nll_loss(log_prob, target, weight=None if weight is None else _float(weight), reduction=reduction,
                      ignore_index=ignore_index) if label_smoothing == 0.0 else F.cross_entropy(
        log_prob, target, weight=None if weight is None else _float(weight), reduction=reduction,
        ignore_index=ignore_index, label_smoothing=label_smoothing)
    if reduction != "none":
        loss = loss.reshape(1)
    empty = torch.empty(0, dtype=torch.float32, device=input.device)
    return loss.to(input.dtype), log_prob.to(input.dtype), empty, empty


def _to_bnsd(tensor: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    if layout == "BNSD":
        return tensor
    if layout == "BSND":
        return tensor.transpose(1, 2)
    if layout == "BSH":
        batch, length, hidden = tensor.shape
        return tensor.reshape(batch, length, heads, hidden // heads).transpose(1, 2)
    if layout == "SBH":
        length, batch, hidden = tensor.shape
        return tensor.reshape(length, batch, heads, hidden // heads).permute(1, 2, 0, 3)
    raise NotImplementedError(f"npu_fusion_attention's composite supports BSH, SBH, BSND and BNSD, not {layout}")


def _from_bnsd(tensor: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return tensor
    if layout == "BSND":
        return tensor.transpose(1, 2)
    batch, heads, length, dim = tensor.shape
    if layout == "BSH":
        return tensor.transpose(1, 2).reshape(batch, length, heads * dim)
    return tensor.permute(2, 0, 1, 3).reshape(length, batch, heads * dim)


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, softmax_layout="", sink=None, dropout_mask=None, seed=0,
                         offset=0):
    if keep_prob != 1.0:
        raise NotImplementedError("npu_fusion_attention's composite has no dropout (keep_prob must be 1.0): "
                                  "the benchmark cannot draw the chip's dropout mask")
    if sparse_mode not in (0, 2, 3) or padding_mask is not None or sink is not None or actual_seq_qlen is not None:
        raise NotImplementedError("npu_fusion_attention's composite covers sparse_mode 0, 2 and 3 without "
                                  "padding_mask, sink or varlen (TND) inputs")
    q = _float(_to_bnsd(query, input_layout, head_num))
    kv_heads = head_num * key.shape[-1] // query.shape[-1] if input_layout in ("BSH", "SBH") else None
    k = _float(_to_bnsd(key, input_layout, kv_heads or head_num))
    v = _float(_to_bnsd(value, input_layout, kv_heads or head_num))
    if k.shape[1] != q.shape[1]:
        repeat = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if pse is not None:
        scores = scores + _float(pse)
    rows, columns = scores.shape[-2], scores.shape[-1]
    if sparse_mode == 2:
        mask = torch.ones(rows, columns, dtype=torch.bool, device=scores.device).triu(1)
    elif sparse_mode == 3:
        mask = torch.ones(rows, columns, dtype=torch.bool, device=scores.device).triu(columns - rows + 1)
    else:
        mask = atten_mask.bool() if atten_mask is not None else None
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - row_max)
    row_sum = weights.sum(dim=-1, keepdim=True)
    out = torch.matmul(weights / row_sum, v).to(query.dtype)
    softmax_max = row_max.expand(*row_max.shape[:-1], 8).contiguous()
    softmax_sum = row_sum.expand(*row_sum.shape[:-1], 8).contiguous()
    empty = torch.empty(0, dtype=query.dtype, device=query.device)
    return _from_bnsd(out, input_layout), softmax_max, softmax_sum, empty, seed, offset, 0


COMPOSITES: dict[str, Callable[..., Any]] = {
    "npu_rms_norm": npu_rms_norm,
    "npu_add_rms_norm": npu_add_rms_norm,
    "npu_rotary_mul": npu_rotary_mul,
    "npu_swiglu": npu_swiglu,
    "npu_geglu": npu_geglu,
    "npu_gelu": npu_gelu,
    "npu_fast_gelu": npu_fast_gelu,
    "npu_scaled_masked_softmax": npu_scaled_masked_softmax,
    "npu_confusion_transpose": npu_confusion_transpose,
    "npu_cross_entropy_loss": npu_cross_entropy_loss,
    "npu_fusion_attention": npu_fusion_attention,
}


def composite_for(name: str) -> Callable[..., Any] | None:
    return COMPOSITES.get(name)


def missing_composite(name: str) -> Callable[..., Any]:
    """The benchmark's stand-in for an operator without a composite: a clear error."""

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"npusim compare: torch_npu.{name} has no fp32 composite, so the CPU benchmark cannot run it. "
            f"Composites exist for: {', '.join(sorted(COMPOSITES))}.")

    unavailable.__name__ = name
    return unavailable


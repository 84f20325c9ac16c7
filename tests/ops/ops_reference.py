"""Plain-PyTorch references for torch_npu's operators, written from the documented math
(shared/reference/torch_npu-custom-ops.md), and small test helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

PYTHON_SOURCE = Path(__file__).resolve().parents[2] / "python"


def sparse_mask(mode: int, sq: int, skv: int, pre: int = 2147483647, nxt: int = 2147483647, prefix: int = 0):
    """True = masked, for the sparse modes that generate their mask (reference §4.1 table)."""
    i = torch.arange(sq).unsqueeze(1)
    j = torch.arange(skv).unsqueeze(0)
    shift = skv - sq
    if mode == 0:
        return ((j - i) > nxt) | ((i - j) > pre)
    if mode == 2:
        return j > i
    if mode == 3:
        return j > i + shift
    if mode == 4:
        return ((j - i) > nxt + shift) | ((i - j) > pre - shift)
    if mode == 6:
        return (j > i + shift) & (j >= prefix)
    raise ValueError(mode)


def attention(q, k, v, scale, mask=None, pse=None, keep=None, keep_prob=1.0):
    """BNSD attention in float64: softmax(scale*(QK^T + pse), masked) (dropout) V; returns out, max, sum."""
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, 1)
    v = v.repeat_interleave(group, 1)
    s = q @ k.transpose(-2, -1)
    if pse is not None:
        s = (s + pse.double()) * scale
    else:
        s = s * scale
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    m = s.amax(-1)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m_safe.unsqueeze(-1))
    total = e.sum(-1)
    p = torch.where(total.unsqueeze(-1) > 0, e / total.unsqueeze(-1), torch.zeros_like(e))
    if keep is not None:
        p = p * keep.double() / keep_prob
    return p @ v, m, total


def to_bnsd(t, layout, heads):
    if layout == "BSH":
        b, s, h = t.shape
        return t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)
    if layout == "SBH":
        s, b, h = t.shape
        return t.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    return t


def from_bnsd(t, layout):
    b, n, s, d = t.shape
    if layout == "BSH":
        return t.permute(0, 2, 1, 3).reshape(b, s, n * d)
    if layout == "SBH":
        return t.permute(2, 0, 1, 3).reshape(s, b, n * d)
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    return t


def rms_norm(x, gamma, eps=1e-6):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    xf = x.double()
    rstd = torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + eps)
    return (xf * rstd * gamma.double()).to(x.dtype), rstd


def rotate_half(x):
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)


def rotate_interleave(x):
    return torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)


def rotary(x, cos, sin, mode="half"):
    rot = rotate_half if mode == "half" else rotate_interleave
    return x * cos + rot(x) * sin


def swiglu(x, dim=-1):
    a, b = x.chunk(2, dim)
    return torch.nn.functional.silu(a) * b


def geglu(x, dim=-1, approximate=1, activate_left=False):
    a, b = x.chunk(2, dim)
    mode = "tanh" if approximate == 1 else "none"
    if activate_left:
        g = torch.nn.functional.gelu(a, approximate=mode)
        return g * b, g
    g = torch.nn.functional.gelu(b, approximate=mode)
    return a * g, g


def numeric_grad(fn, x, eps=1e-3):
    """Central finite differences of sum(fn(x) * w) for a fixed random weight w (float64 on the CPU
    copy of x); returns (w, grad)."""
    x = x.detach().cpu().double()
    w = torch.randn(fn(x.float()).shape, dtype=torch.float64)
    grad = torch.zeros_like(x)
    flat = x.view(-1)
    for index in range(flat.numel()):
        old = flat[index].item()
        flat[index] = old + eps
        plus = (fn(x.float()).double().cpu() * w).sum()
        flat[index] = old - eps
        minus = (fn(x.float()).double().cpu() * w).sum()
        flat[index] = old
        grad.view(-1)[index] = (plus - minus) / (2 * eps)
    return w, grad


def run_python(code: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter with this checkout's npusim first on the path."""
    environment = dict(os.environ)
    if any((PYTHON_SOURCE / "npusim").glob("_C*.so")):  # the checkout's build, else the installed npusim
        environment["PYTHONPATH"] = str(PYTHON_SOURCE) + os.pathsep + environment.get("PYTHONPATH", "")
    environment.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment, capture_output=True,
                          text=True, timeout=timeout)

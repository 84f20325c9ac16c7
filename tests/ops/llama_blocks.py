"""A LLaMA decoder block written twice: the MindSpeed way (torch_npu's fused RMSNorm, rotary,
fusion attention and SwiGLU) and in plain PyTorch (the Hugging Face formulation)."""

from __future__ import annotations

import math

import torch
from torch import nn


class LlamaBlock(nn.Module):
    def __init__(self, hidden=32, heads=4, kv_heads=2, intermediate=64, eps=1e-6):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.eps = heads, kv_heads, hidden // heads, eps
        self.input_norm = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.post_norm = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def rope(self, seq, device, dtype=torch.float32):
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        emb = torch.cat((angles, angles), -1)
        return emb.cos().to(device, dtype), emb.sin().to(device, dtype)


class FusedLlamaBlock(LlamaBlock):
    """MindSpeed style: npu_rms_norm, npu_rotary_mul (BSND, [1,S,1,D] cos/sin), npu_fusion_attention
    (BSND, causal via sparse_mode 3 and the 2048x2048 mask), npu_swiglu."""

    def forward(self, x):
        import torch_npu

        b, s, _ = x.shape
        cos, sin = self.rope(s, x.device, x.dtype)
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        h = torch_npu.npu_rms_norm(x, self.input_norm, epsilon=self.eps)[0]
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim)
        k = self.k_proj(h).view(b, s, self.kv_heads, self.head_dim)
        v = self.v_proj(h).view(b, s, self.kv_heads, self.head_dim)
        q = torch_npu.npu_rotary_mul(q, cos, sin)
        k = torch_npu.npu_rotary_mul(k, cos, sin)
        mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=x.device), 1)
        attn = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSND", atten_mask=mask,
                                              scale=1 / math.sqrt(self.head_dim), sparse_mode=3)[0]
        x = x + self.o_proj(attn.reshape(b, s, -1))
        h = torch_npu.npu_rms_norm(x, self.post_norm, epsilon=self.eps)[0]
        return x + self.down_proj(torch_npu.npu_swiglu(self.gate_up_proj(h), dim=-1))


class PlainLlamaBlock(LlamaBlock):
    def rms_norm(self, x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    @staticmethod
    def rotate_half(x):
        x1, x2 = x.chunk(2, -1)
        return torch.cat((-x2, x1), -1)

    def forward(self, x):
        b, s, _ = x.shape
        cos, sin = self.rope(s, x.device, x.dtype)
        h = self.rms_norm(x, self.input_norm)
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, -1))
        h = self.rms_norm(x, self.post_norm)
        gate, up = self.gate_up_proj(h).chunk(2, -1)
        return x + self.down_proj(torch.nn.functional.silu(gate) * up)

"""A LLaMA model in plain PyTorch, as Hugging Face's modeling_llama writes it (RMSNorm, rotary
embeddings, causal scaled-dot-product attention, SwiGLU MLP), for the examples that shard or
estimate a whole model (llama_fsdp_estimate.py). Defaults are LLaMA-2-7B's shape."""

import torch
import torch.nn.functional as F
from torch import nn

class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width, bias=False)
        self.o_proj = nn.Linear(width, width, bias=False)

    def forward(self, x, cos, sin):
        batch, length, width = x.shape
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (proj(x).view(shape).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, width))


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(width, hidden, bias=False)
        self.up_proj = nn.Linear(width, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, width: int, heads: int, hidden: int):
        super().__init__()
        self.input_layernorm = RMSNorm(width)
        self.self_attn = Attention(width, heads)
        self.post_attention_layernorm = RMSNorm(width)
        self.mlp = MLP(width, hidden)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """LLaMA-2-7B: 32 layers, width 4096, 32 heads, SwiGLU 11008, vocabulary 32000."""

    def __init__(self, layers=32, width=4096, heads=32, hidden=11008, vocab=32000):
        super().__init__()
        self.heads = heads
        self.embed_tokens = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(DecoderLayer(width, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def rotary(self, length: int, device):
        dim = self.embed_tokens.embedding_dim // self.heads
        inverse = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=device).float() / dim))
        angles = torch.outer(torch.arange(length, device=device).float(), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos(), angles.sin()

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        cos, sin = self.rotary(tokens.size(1), tokens.device)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


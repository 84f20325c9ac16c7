"""Estimate one training step of a LLaMA-2-7B-shaped model on one Ascend 910B2, on any laptop.

The model is built on the simulated NPU inside ``npusim.estimate()``: tensors have shapes and
device memory but no data, so the 7-billion-parameter model needs no host memory for its weights.
One step (forward, backward, AdamW) runs with bf16 autocast; npusim prices every operator on the
chip's timeline and reports the step time, where it goes, the model FLOPs utilisation and the peak
device memory, and whether the step fits in the chip's 64 GB.

    npusim run examples/llama_estimate.py [--layers 32] [--seq 4096] [--batch 1]
"""

import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import npusim


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


def estimate_step(layers: int = 32, seq: int = 4096, batch: int = 1):
    """One training step in estimate-only mode; returns npusim's performance report for it."""
    with npusim.estimate(), torch.device("npu"):
        model = Llama(layers=layers)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        tokens = torch.randint(0, 32000, (batch, seq + 1))
        npusim.reset_performance_report()
        torch.npu.reset_peak_memory_stats()
        with torch.autocast("npu", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        report = npusim.performance_report(steps=1)
        report["parameters"] = parameter_count(model)
        report["tokens"] = batch * seq
        report["peak_reserved_bytes"] = torch.npu.max_memory_reserved()
        report["capacity_bytes"] = torch.npu.get_device_properties(0).total_memory
        del model, optimizer, logits, loss
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    report = estimate_step(args.layers, args.seq, args.batch)
    gib = 2**30
    tokens_per_s = report["tokens"] / report["step_s"]
    fits = report["peak_reserved_bytes"] <= report["capacity_bytes"]
    print(f"LLaMA-2-7B-shaped model: {report['parameters'] / 1e9:.2f} B parameters, {args.layers} layers, "
          f"sequence {args.seq}, micro-batch {args.batch}, bf16 autocast, AdamW (fp32 master weights and states)")
    print(f"estimated step on one {report['chip']}: {report['step_s'] * 1e3:.1f} ms "
          f"({tokens_per_s:.0f} tokens/s), MFU {report['mfu'] * 100:.1f}%")
    busy = ", ".join(f"{unit} {seconds * 1e3:.1f} ms" for unit, seconds in report["busy_s"].items() if seconds)
    print(f"  breakdown: {busy}, host-bound idle {report['host_bound_idle_s'] * 1e3:.1f} ms")
    top = ", ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in report["top_operators"][:6])
    print(f"  top operators: {top}")
    print(f"  peak device memory: {report['peak_memory_bytes'] / gib:.1f} GiB allocated, "
          f"{report['peak_reserved_bytes'] / gib:.1f} GiB reserved; capacity {report['capacity_bytes'] / gib:.1f} GiB")
    if not fits:
        print("  does NOT fit in one NPU's memory without memory-saving measures (e.g. ZeRO/FSDP sharding of the "
              "optimizer states, activation recomputation, bf16 master weights)")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()

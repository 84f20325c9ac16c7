"""torch_npu's fused operators (csrc/ops): what they change in an estimate, and what they cost on
the host.

1. The estimated training step of a LLaMA-2-7B-shaped model (32 layers, sequence 4096, bf16
   autocast) written the MindSpeed way (npu_rms_norm, npu_rotary_mul,
   npu_fusion_attention, npu_swiglu on a merged gate/up projection, NpuFusedAdamW) against the
   same model in plain PyTorch (AdamW foreach). Both run in estimate-only mode; the report
   shows where the difference comes from (launches, Vector time).
2. Host time of each fused operator on npu against the plain-PyTorch formula of the same math on
   the CPU, in the same run (median of repeated calls).

    python3 bench/bench_fused_ops.py [--layers 32] [--seq 4096]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import geometric_mean, import_torch_and_npusim, median, print_table, target_line  # noqa: E402

torch = import_torch_and_npusim(None)
import npusim  # noqa: E402
import torch_npu  # noqa: E402
import torch_npu.optim  # noqa: E402
from torch import nn  # noqa: E402


class PlainDecoderLayer(nn.Module):
    """A LLaMA decoder layer in plain PyTorch (Hugging Face's formulation): RMSNorm in fp32, separate q/k/v
    projections, rotate-half rotary, scaled_dot_product_attention (causal), gate/up/down with SiLU."""

    def __init__(self, width: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.input_norm = nn.Parameter(torch.ones(width))
        self.qkv = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(3))
        self.o_proj = nn.Linear(width, width, bias=False)
        self.post_norm = nn.Parameter(torch.ones(width))
        self.gate_proj = nn.Linear(width, hidden, bias=False)
        self.up_proj = nn.Linear(width, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, width, bias=False)

    @staticmethod
    def rms_norm(x, weight):
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * weight

    @staticmethod
    def rotary(t, cos, sin):
        first, second = t.chunk(2, -1)
        return t * cos + torch.cat((-second, first), -1) * sin

    def forward(self, x, cos, sin):
        batch, length, width = x.shape
        shape = (batch, length, self.heads, width // self.heads)
        h = self.rms_norm(x, self.input_norm)
        q, k, v = (proj(h).view(shape).transpose(1, 2) for proj in self.qkv)
        q, k = self.rotary(q, cos, sin), self.rotary(k, cos, sin)
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(attn.transpose(1, 2).reshape(batch, length, width))
        h = self.rms_norm(x, self.post_norm)
        return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class PlainLlama(nn.Module):
    """The LLaMA-2-7B-shaped model in plain PyTorch: embedding, decoder layers, final norm, LM head."""

    def __init__(self, layers=32, width=4096, heads=32, hidden=11008, vocab=32000):
        super().__init__()
        self.head_dim = width // heads
        self.embed_tokens = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(PlainDecoderLayer(width, heads, hidden) for _ in range(layers))
        self.norm = nn.RMSNorm(width, eps=1e-5)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def rotary(self, length: int, device):
        inverse = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, device=device).float() / self.head_dim))
        angles = torch.outer(torch.arange(length, device=device).float(), inverse)
        angles = torch.cat((angles, angles), -1)
        return angles.cos(), angles.sin()

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        cos, sin = self.rotary(tokens.size(1), tokens.device)
        cos, sin = cos[None, None], sin[None, None]  # [b, heads, s, d] broadcast
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


class FusedDecoderLayer(nn.Module):
    """PlainDecoderLayer written with torch_npu's fused operators, as MindSpeed-LLM runs it."""

    def __init__(self, width: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.input_norm = nn.Parameter(torch.ones(width))
        self.qkv = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(3))
        self.o_proj = nn.Linear(width, width, bias=False)
        self.post_norm = nn.Parameter(torch.ones(width))
        self.gate_up_proj = nn.Linear(width, 2 * hidden, bias=False)
        self.down_proj = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        batch, length, width = x.shape
        shape = (batch, length, self.heads, width // self.heads)
        h = torch_npu.npu_rms_norm(x, self.input_norm, epsilon=1e-5)[0]
        q, k, v = (proj(h).view(shape) for proj in self.qkv)
        q = torch_npu.npu_rotary_mul(q, cos, sin)
        k = torch_npu.npu_rotary_mul(k, cos, sin)
        mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=x.device), 1)
        attn = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSND", atten_mask=mask,
                                              scale=1 / math.sqrt(width // self.heads), sparse_mode=3)[0]
        x = x + self.o_proj(attn.reshape(batch, length, width))
        h = torch_npu.npu_rms_norm(x, self.post_norm, epsilon=1e-5)[0]
        return x + self.down_proj(torch_npu.npu_swiglu(self.gate_up_proj(h), dim=-1))


class FusedLlama(PlainLlama):
    def __init__(self, layers=32, width=4096, heads=32, hidden=11008, vocab=32000):
        super().__init__(layers=0, width=width, heads=heads, hidden=hidden, vocab=vocab)
        self.layers = nn.ModuleList(FusedDecoderLayer(width, heads, hidden) for _ in range(layers))

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        cos, sin = self.rotary(tokens.size(1), tokens.device)
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]  # BSND broadcast
        for layer in self.layers:
            x = layer(x, cos, sin)
        h = torch_npu.npu_rms_norm(x, self.norm.weight, epsilon=1e-5)[0]
        return self.lm_head(h)


def estimate(model_class, optimizer_class, layers: int, seq: int) -> dict:
    with npusim.estimate(), torch.device("npu"):
        model = model_class(layers=layers)
        optimizer = optimizer_class(model.parameters(), lr=1e-4)
        tokens = torch.randint(0, 32000, (1, seq + 1))
        npusim.reset_performance_report()
        npusim.reset_placement_report()
        with torch.autocast("npu", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)),
                                                     tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        torch.npu.synchronize()
        report = npusim.performance_report(steps=1)
        del model, optimizer, logits, loss
    return report


def host_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times)


def operator_rows(repeat: int):
    torch.manual_seed(0)
    x = torch.randn(8, 512, 1024)
    gamma = torch.randn(1024)
    q = torch.randn(4, 512, 8, 64)
    cos, sin = torch.randn(1, 512, 1, 64), torch.randn(1, 512, 1, 64)
    g = torch.randn(8, 512, 2048)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    qb = q.permute(0, 2, 1, 3)

    def rms_cpu():
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma

    def rot_cpu():
        a, b = q.chunk(2, -1)
        return q * cos + torch.cat((-b, a), -1) * sin

    def swiglu_cpu():
        a, b = g.chunk(2, -1)
        return torch.nn.functional.silu(a) * b

    def attention_cpu():
        return torch.nn.functional.scaled_dot_product_attention(qb, qb, qb, is_causal=True)

    xn, gn, qn, cn, sn, gg, mn = (t.npu() for t in (x, gamma, q, cos, sin, g, mask))
    cases = [
        ("npu_rms_norm", lambda: torch_npu.npu_rms_norm(xn, gn), rms_cpu),
        ("npu_rotary_mul", lambda: torch_npu.npu_rotary_mul(qn, cn, sn), rot_cpu),
        ("npu_swiglu", lambda: torch_npu.npu_swiglu(gg), swiglu_cpu),
        ("npu_fusion_attention", lambda: torch_npu.npu_fusion_attention(qn, qn, qn, 8, "BSND", atten_mask=mn,
                                                                        scale=0.125, sparse_mode=3), attention_cpu),
    ]
    rows, ratios = [], []
    for name, on_npu, on_cpu in cases:
        npu_s, cpu_s = host_time(on_npu, repeat), host_time(on_cpu, repeat)
        ratios.append(npu_s / cpu_s)
        rows.append([name, f"{npu_s * 1e3:.2f} ms", f"{cpu_s * 1e3:.2f} ms", f"{npu_s / cpu_s:.2f}x"])
    return rows, ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="4 layers, 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.layers, args.repeat = min(args.layers, 4), min(args.repeat, 2)
    unfused = estimate(PlainLlama, lambda params, lr: torch.optim.AdamW(params, lr=lr, foreach=True), args.layers,
                       args.seq)
    fused = estimate(FusedLlama, torch_npu.optim.NpuFusedAdamW, args.layers, args.seq)
    print(f"LLaMA-2-7B-shaped training step ({args.layers} layers, sequence {args.seq}, bf16 autocast), "
          f"estimated on {fused['chip']}:")
    rows = []
    for name, report in (("plain PyTorch", unfused), ("torch_npu fused ops", fused)):
        busy = report["busy_s"]
        rows.append([name, f"{report['step_s'] * 1e3:.1f} ms", str(report["launches"]),
                     f"{busy['cube'] * 1e3:.1f} ms", f"{busy['vector'] * 1e3:.1f} ms",
                     f"{report['host_bound_idle_s'] * 1e3:.1f} ms", f"{report['mfu'] * 100:.1f}%"])
    print_table(["model", "step", "launches", "cube", "vector", "host-bound idle", "MFU"], rows)
    print("fused top operators: " + ", ".join(f"{n} {s * 1e3:.1f} ms" for n, s in fused["top_operators"][:6]))
    print()
    print("host time per call, fused operator on npu vs the plain formula on the CPU:")
    op_rows, ratios = operator_rows(args.repeat)
    print_table(["operator", "npu", "cpu", "npu/cpu"], op_rows)
    print(target_line("fused LLaMA-2-7B step estimate / plain", fused["step_s"] / unfused["step_s"], 1.0))
    print(target_line("fused operators host time npu/cpu (geomean)", geometric_mean(ratios), 2.0))


if __name__ == "__main__":
    main()

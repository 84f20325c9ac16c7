"""Host time of reduced-precision (fp16, bf16) GPT training on npu against the same program in fp32.

A nanoGPT-style model (fused causal attention through F.scaled_dot_product_attention, GELU MLP,
LayerNorm, tied embeddings; 2 layers, width 128, 4 heads, context 64, batch 8) trains with AdamW
under ``torch.autocast`` (fp16 with a GradScaler, or bf16), as nanoGPT's train.py does on an
accelerator. On the chip such a step is faster in 16 bits; on the host it must not be much slower
than the fp32 step: npusim runs the 16-bit matrix products and attention as fp32 kernels on
upcast copies (the Cube's fp32 accumulation, see docs/host-speed.md), which on hosts without
16-bit matrix instructions is faster than PyTorch's CPU fp16/bf16 GEMM (on hosts with AMX-BF16 it
is slower than the CPU's bf16 GEMM).

Each round times one step of each configuration back to back (npu fp32, npu fp16, npu bf16, and
the same three on cpu for context); the result is the median over the rounds of the per-round
ratio to the npu fp32 step:

    TARGET fp16 GPT training step / fp32 npu step: 1.36x (target <= 1.3x) MISSED
    TARGET bf16 GPT training step / fp32 npu step: 1.26x (target <= 1.3x) MET

Usage: python bench/bench_amp_training.py [--quick] [--threads N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TARGET = 1.3


def build(torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            batch, length, width = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
            q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(batch, length, width))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class Gpt(nn.Module):
        def __init__(self, vocab=512, width=128, layers=2, heads=4, context=64):
            super().__init__()
            self.token, self.position = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)
            self.head.weight = self.token.weight
            # GPT-2's initialisation, as nanoGPT's. (PyTorch's default N(0, 1) embedding, tied to
            # the output layer, makes the softmax so peaked that the fp32 gradients fill with
            # denormal floats, which x86 cores handle in microcode: the fp32 step then runs three
            # to four times slower than its arithmetic, and every 16-bit ratio looks good.)
            for module in self.modules():
                if isinstance(module, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)

        def forward(self, tokens):
            positions = torch.arange(tokens.size(1), device=tokens.device)
            return self.head(self.ln(self.blocks(self.token(tokens) + self.position(positions))))

    class Trainer:
        def __init__(self, device, dtype):
            torch.manual_seed(0)
            self.device, self.dtype = device, dtype
            self.model = Gpt().to(device)
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4, foreach=True)
            self.scaler = torch.amp.GradScaler(device, enabled=dtype == torch.float16)
            self.data = torch.Generator().manual_seed(1)

        def step(self):
            tokens = torch.randint(0, 512, (8, 65), generator=self.data).to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(self.device, dtype=self.dtype, enabled=self.dtype != torch.float32):
                logits = self.model(tokens[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            return loss.item()

    return Trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about 30 s)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both devices (default 1)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 15, quick 5)")
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 15)

    torch = _common.import_torch_and_npusim(args.threads)
    import warnings

    warnings.filterwarnings("ignore")  # the GradScaler's notes about the npu device
    Trainer = build(torch)
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    configs = [(device, name) for device in ("npu", "cpu") for name in dtypes]
    trainers = {config: Trainer(config[0], dtypes[config[1]]) for config in configs}
    for trainer in trainers.values():
        for _ in range(2):
            trainer.step()  # warm-up: first-call records, allocator pools, autocast caches
    times = {config: [] for config in configs}
    for r in range(rounds):
        order = configs if r % 2 == 0 else list(reversed(configs))
        for config in order:
            start = time.perf_counter()
            trainers[config].step()
            times[config].append(time.perf_counter() - start)

    print(f"npusim from {_common.npusim_location()}")
    print(f"GPT training step under autocast, torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"{rounds} alternating rounds, median per step")
    rows = []
    for device, name in configs:
        per_step = _common.median(times[(device, name)])
        paired = _common.median([t / f for t, f in zip(times[(device, name)], times[(device, "fp32")])])
        rows.append([device, name, f"{per_step * 1e3:.2f}", f"{paired:.3f}x"])
    _common.print_table(["device", "dtype", "ms per step", f"/ fp32 step on the same device"], rows)
    for name in ("fp16", "bf16"):
        ratio = _common.median([t / f for t, f in zip(times[("npu", name)], times[("npu", "fp32")])])
        print(_common.target_line(f"{name} GPT training step / fp32 npu step", ratio, TARGET))


if __name__ == "__main__":
    main()

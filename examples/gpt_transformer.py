"""A small GPT-style transformer trained for a few steps on synthetic tokens.

Runs on the simulated NPU by default (``--device npu``); ``--device cpu`` runs
the same program on the CPU, and both print the same losses. ``--amp fp16``
(or ``bf16``) trains with mixed precision as Ascend training scripts do:
``torch.autocast`` around the forward pass and, for fp16, a gradient scaler.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class SmallGPT(nn.Module):
    def __init__(self, vocab: int = 512, width: int = 128, layers: int = 2, heads: int = 4, context: int = 64):
        super().__init__()
        self.token = nn.Embedding(vocab, width)
        self.position = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.token.weight  # tied embeddings, as in GPT-2
        self.apply(self._init_weights)
        # GPT-2 scales the projections into the residual stream by 1/sqrt(2 x layers).
        for block in self.blocks:
            for projection in (block.attention.proj, block.mlp[2]):
                nn.init.normal_(projection.weight, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init_weights(module):
        # GPT-2's initialisation: weights N(0, 0.02), biases zero. With PyTorch's default
        # unit-variance embeddings the tied output layer starts with logits of size ~sqrt(width)
        # and a loss far above ln(vocab); with these the first loss is close to ln(vocab).
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.token(tokens) + self.position(positions)
        return self.head(self.ln(self.blocks(x)))


class Trainer:
    """The example's training state and its loop body: one step per call to :meth:`step`."""

    def __init__(self, device: str = "npu", batch_size: int = 8, context: int = 64, seed: int = 0,
                 amp: str | None = None):
        torch.manual_seed(seed)
        self.device, self.batch_size, self.context = device, batch_size, context
        self.amp_dtype = {None: None, "fp16": torch.float16, "bf16": torch.bfloat16}[amp]
        device_type = torch.device(device).type
        self.autocast = lambda: torch.autocast(device_type, dtype=self.amp_dtype or torch.float16,
                                               enabled=self.amp_dtype is not None)
        # fp16 needs loss scaling (its small gradients would underflow); bf16 does not.
        self.scaler = torch.amp.GradScaler(device_type, enabled=self.amp_dtype == torch.float16)
        self.model = SmallGPT(context=context).to(device)
        # foreach=True: the same optimizer implementation on both devices (PyTorch
        # otherwise picks the foreach one on accelerators and a for-loop on CPU,
        # which differ in the last bits).
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4, foreach=True)
        self.data = torch.Generator().manual_seed(seed + 1)

    def step(self) -> float:
        """One step on a fresh synthetic batch of tokens; returns the loss."""
        tokens = torch.randint(0, 512, (self.batch_size, self.context + 1), generator=self.data).to(self.device)
        self.optimizer.zero_grad()
        with self.autocast():
            logits = self.model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.item()


def train(device: str = "npu", steps: int = 5, batch_size: int = 8, context: int = 64, seed: int = 0,
          amp: str | None = None):
    """Trains from a fixed seed and returns the loss of every step."""
    trainer = Trainer(device, batch_size, context, seed, amp)
    return [trainer.step() for _ in range(steps)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="npu")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--amp", choices=["fp16", "bf16"], default=None, help="mixed precision (autocast)")
    args = parser.parse_args()
    for step, loss in enumerate(train(args.device, args.steps, amp=args.amp)):
        print(f"step {step}: loss {loss:.6f}")


if __name__ == "__main__":
    main()

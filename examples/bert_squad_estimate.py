"""Estimate BERT fine-tuning throughput per Ascend NPU on SQuAD v1.1 as Ascend's ModelZoo runs it, on any laptop.

The setup is the Ascend ModelZoo PyTorch Bert-Squad recipe (``PyTorch/built-in/nlp/Bert-Squad_ID0470_for_PyTorch``:
``run_squad.py`` with ``modeling.py``), its 8-NPU performance scripts: ``test/train_base_performance_8p.sh``
(BERT-Base, batch 96 per NPU) and ``test/train_ID4126_large_performance_8p.sh`` (BERT-Large, batch 32), both
``--fp16 --max_seq_length 384 --loss_scale 4096``: apex AMP at opt level O2 with ``combine_grad`` and
``combine_ddp`` (fp16 model, LayerNorm in fp16, fp32 master weights in one flat buffer, the flat fp16 gradients
all-reduced once after the backward), apex's fused BERT Adam on the flat master buffer. The network is the
recipe's ``modeling.py``: separate query / key / value projections, attention as two batched matmuls around the
scaled, masked softmax and its dropout (0.1), ``torch_npu.fast_gelu`` after the intermediate projection (the
recipe's ``bias_gelu_training``), dropout and residual add before each LayerNorm, the two-logit QA head and the
mean of two cross-entropies; ``loss.item()`` each step (the recipe logs it).

Published (README of the recipe, "2025年5月10日更新的性能数据", CANN 8.1.RC1 and torch_npu 7.0.0): 8p-Atlas 900 A2
PoDc FP16, BERT-Base 3,118 and BERT-Large 1,084 sequences/s for 8 NPUs. (The table of 31 December 2024 at ac656f0,
which it replaced, gave 3,032 and 1,077; between the two commits the recipe's code and scripts did not change, only
comments in test/env_npu.sh.)

The recipe names the server only (Atlas 900 A2 PoDc); the script simulates its 20-core NPU, the 910B3, unless
``NPUSIM_SOC`` or ``--chip`` names another (megatron_estimate.PUBLISHED_NPU).

    npusim run examples/bert_squad_estimate.py [--model bert-base|bert-large] [--chip Ascend910B2]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import npusim
from megatron_estimate import chip_argument, select_chip  # examples/, beside this script

REPO = "xiaobingling93-pixel/Ascend-ModelZoo-PyTorch (mirror of Ascend/ModelZoo-PyTorch)"
COMMIT = "393c12efd0b7c1419b6c4c99031149beeb9bacc2"
DIRECTORY = "PyTorch/built-in/nlp/Bert-Squad_ID0470_for_PyTorch"


@dataclasses.dataclass(frozen=True)
class BertSetup:
    key: str
    name: str
    layers: int
    width: int
    heads: int
    ffn: int
    batch: int
    script: str
    reference_sequences_per_s: float  # per NPU
    seq: int = 384
    vocab: int = 30522
    npus: int = 8

    @property
    def source(self) -> str:
        return f"{REPO} {DIRECTORY}/{self.script} and README.md @ {COMMIT}"


SETUPS = {
    "bert-base": BertSetup("bert-base", "BERT-Base SQuAD", 12, 768, 12, 3072, 96,
                           "test/train_base_performance_8p.sh", 3118 / 8),
    "bert-large": BertSetup("bert-large", "BERT-Large SQuAD", 24, 1024, 16, 4096, 32,
                            "test/train_ID4126_large_performance_8p.sh", 1084 / 8),
}


class BertLayer(nn.Module):
    """modeling.py's BertLayer (BertAttention, BertIntermediate with fast_gelu, BertOutput)."""

    def __init__(self, s: BertSetup):
        super().__init__()
        self.heads, self.head_dim = s.heads, s.width // s.heads
        self.query, self.key, self.value = (nn.Linear(s.width, s.width) for _ in range(3))
        self.dense = nn.Linear(s.width, s.width)
        self.norm1 = nn.LayerNorm(s.width, eps=1e-12)
        self.intermediate = nn.Linear(s.width, s.ffn)
        self.output = nn.Linear(s.ffn, s.width)
        self.norm2 = nn.LayerNorm(s.width, eps=1e-12)

    def forward(self, x, mask):
        import torch_npu

        b, seq, width = x.shape
        split = (b, seq, self.heads, self.head_dim)
        q = self.query(x).reshape(split).permute(0, 2, 1, 3)
        k = self.key(x).reshape(split).permute(0, 2, 3, 1)
        v = self.value(x).reshape(split).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k) / math.sqrt(self.head_dim) + mask
        probs = F.dropout(F.softmax(scores, dim=-1), 0.1, self.training)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().reshape(b, seq, width)
        x = self.norm1(F.dropout(self.dense(context), 0.1, self.training) + x)
        # LinearActivation with bias_gelu_training: F.linear without the bias, then fast_gelu.
        h = torch_npu.npu_fast_gelu(F.linear(x, self.intermediate.weight))
        return self.norm2(F.dropout(self.output(h), 0.1, self.training) + x)


class BertForQuestionAnswering(nn.Module):
    def __init__(self, s: BertSetup):
        super().__init__()
        self.word = nn.Embedding(s.vocab, s.width)
        self.position = nn.Embedding(512, s.width)
        self.token_type = nn.Embedding(2, s.width)
        self.norm = nn.LayerNorm(s.width, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(s) for _ in range(s.layers))
        self.qa_outputs = nn.Linear(s.width, 2)

    def forward(self, input_ids, token_type_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, dtype=torch.int32, device=input_ids.device).unsqueeze(0).expand_as(input_ids)
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        x = F.dropout(self.norm(x), 0.1, self.training)
        mask = (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        start, end = self.qa_outputs(x).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


def _allreduce_seconds(nbytes: float, npus: int) -> float:
    from npusim.distributed import price_collective

    return price_collective("allreduce", int(nbytes), npus, 8)[0]


def step_seconds(s: BertSetup) -> dict[str, float]:
    """Simulated seconds of one training step on one NPU, with its parts."""
    from megatron_estimate import timed_seconds

    with npusim.estimate(), torch.device("npu"):
        model = BertForQuestionAnswering(s).half()
        model.train()
        parameters = sum(p.numel() for p in model.parameters())
        # apex O2 with combine_grad: fp32 master weights and gradients in one flat buffer each.
        master = nn.Parameter(torch.empty(parameters))
        master.grad = torch.empty(parameters)
        optimizer = torch.optim.AdamW([master], lr=1e-4, fused=True)
        optimizer.step()  # creates the states
        flat_half_grads = torch.empty(parameters, dtype=torch.float16)
        flat_half_weights = torch.empty(parameters, dtype=torch.float16)
        found_inf, inv_scale = torch.zeros(1), torch.ones(1)
        ids = torch.randint(0, s.vocab, (s.batch, s.seq))
        types = torch.randint(0, 2, (s.batch, s.seq))
        attention = torch.ones(s.batch, s.seq, dtype=torch.int64)
        starts = torch.randint(0, s.seq, (s.batch,))
        ends = torch.randint(0, s.seq, (s.batch,))

        def compute():
            start, end = model(ids, types, attention)
            loss = (F.cross_entropy(start.float(), starts) + F.cross_entropy(end.float(), ends)) / 2
            model.zero_grad(set_to_none=True)
            (loss * 4096.0).backward()  # amp.scale_loss with --loss_scale 4096
            return loss

        def optimizer_step():
            # amp's combined unscale of the flat fp16 gradients into the fp32 master gradients, the fused
            # Adam step on the flat master buffer, the master weights copied back into the fp16 model.
            master.grad.copy_(flat_half_grads)
            torch._amp_foreach_non_finite_check_and_unscale_([master.grad], found_inf, inv_scale)
            optimizer.step()
            flat_half_weights.copy_(master)

        compute()
        compute_s = timed_seconds(compute)
        optimizer_s = timed_seconds(optimizer_step)
        loss = compute()
        item_s = timed_seconds(lambda: loss.item())  # the step's loss.item(): a host synchronisation
    allreduce_s = _allreduce_seconds(parameters * 2, s.npus)  # combine_ddp: the flat fp16 gradients, after backward
    step = compute_s + allreduce_s + optimizer_s + item_s
    return {"compute_s": compute_s, "allreduce_s": allreduce_s, "optimizer_s": optimizer_s, "step_s": step,
            "sequences_per_s_per_npu": s.batch / step}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SETUPS), default="bert-base")
    chip_argument(parser)
    args = parser.parse_args()
    chip = select_chip(args.chip)
    s = SETUPS[args.model]
    started = time.perf_counter()
    r = step_seconds(s)

    print(f"{s.name} fine-tuning as ModelZoo runs it ({s.source}): batch {s.batch} per NPU, sequence {s.seq}, "
          f"8 NPUs; on an {chip}")
    print(f"  forward + backward {r['compute_s'] * 1e3:.1f} ms, gradient all-reduce {r['allreduce_s'] * 1e3:.1f} ms, "
          f"optimizer {r['optimizer_s'] * 1e3:.1f} ms -> {r['sequences_per_s_per_npu']:.0f} sequences/s per NPU "
          f"(published: {s.reference_sequences_per_s:.0f})")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()

"""Estimate LLaMA pretraining throughput per Ascend 910B2 NPU, as MindSpeed-LLM runs it, on any laptop.

The default is MindSpeed-LLM's published LLaMA-2-7B pretraining setup: 8 NPUs, tensor parallel 1,
pipeline parallel 2, data parallel 4, sequence 4096, micro-batch 1, global batch 256, bf16 weights,
flash attention, fused RMSNorm / SwiGLU / rotary kernels and the distributed optimizer.

How it is estimated (all in ``npusim.estimate()``: tensors have shapes and device memory but no
data, so nothing needs the host memory of a 7B model):

1. One decoder layer runs forward and backward for one micro-batch on the simulated chip; the
   first pipeline stage adds the embedding, the last the final norm, the output layer and the
   fp32 cross-entropy. A stage's time is its layers times the layer time plus its extras.
2. The pipeline (1F1B) takes ``(m + PP - 1) x slowest stage`` with ``m = global / (DP x micro)``
   micro-batches, then the optimizer step on this rank's shard (the distributed optimizer splits
   the fp32 master weights and Adam states over DP): fused AdamW on ``stage parameters / DP``.
3. Data-parallel communication (reduce-scatter of fp32 gradients, all-gather of bf16 parameters)
   uses a simple ring formula, ``(n - 1) / n x bytes / bus bandwidth``, with the 4-card bus
   bandwidth of ascend-hardware.md §3.3 (all-reduce algbw 30 GB/s at 4 cards -> busbw 45 GB/s),
   not overlapped with compute. It is labelled separately in the output. Pipeline send/receive
   of activations (32 MiB per micro-batch at HCCS speed, ~1 ms against stage times of hundreds of
   ms) is left out.

npusim has no torch_npu fused kernels of its own here, so the fused MindSpeed kernels are stood in
for by single aten kernels with the same memory traffic: RMSNorm by a bias-free LayerNorm kernel
(one kernel forward, one backward, as npu_rms_norm), SwiGLU by GLU over the fused gate/up output
(as npu_swiglu), the rotary embedding by one broadcast multiply (as npu_rotary_mul).

    npusim run examples/llama_estimate.py [--model llama2-7b|llama-7b|llama-13b] [--layers N]
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

GB = 1e9


@dataclasses.dataclass(frozen=True)
class Setup:
    """A published pretraining setup (model shape and parallelism)."""

    name: str
    layers: int
    width: int
    heads: int
    ffn: int
    vocab: int
    seq: int
    micro_batch: int
    global_batch: int
    tp: int
    pp: int
    dp: int
    dtype: torch.dtype
    reference_tokens_per_s: float  # per NPU, as published
    source: str

    @property
    def npus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)


SETUPS = {
    "llama2-7b": Setup("LLaMA-2-7B", 32, 4096, 32, 11008, 32000, 4096, 1, 256, 1, 2, 4, torch.bfloat16, 4241,
                       "MindSpeed-LLM, 8x 910B, TP1 PP2 DP4, bf16"),
    "llama-7b": Setup("LLaMA-7B", 32, 4096, 32, 11008, 32000, 2048, 4, 256, 1, 8, 1, torch.float16, 3600,
                      "MindSpeed-LLM, 8x 910B, TP1 PP8, fp16"),
    "llama-13b": Setup("LLaMA-13B", 40, 5120, 40, 13824, 32000, 2048, 1, 128, 1, 8, 1, torch.float16, 1895,
                       "MindSpeed-LLM, 8x 910B, TP1 PP8, fp16"),
}

# Ring data-parallel collectives over the 4-card subset of an 8-NPU HCCS mesh (ascend-hardware.md
# §3.3: all_reduce algbw 30 GB/s at 4 cards; busbw = algbw x 2(n-1)/n = 45 GB/s).
DP_BUS_BYTES_PER_S = {1: math.inf, 2: 18 * GB, 4: 45 * GB, 8: 126 * GB}


class FusedRMSNorm(nn.Module):
    """Stands in for npu_rms_norm: one normalisation kernel forward, one backward."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return F.layer_norm(x, (x.size(-1),), self.weight, None, 1e-5)


class DecoderLayer(nn.Module):
    """A Megatron/MindSpeed LLaMA layer: fused QKV, flash attention, fused gate/up with SwiGLU."""

    def __init__(self, width: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.input_norm = FusedRMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.dense = nn.Linear(width, width, bias=False)
        self.post_norm = FusedRMSNorm(width)
        self.fc1 = nn.Linear(width, 2 * ffn, bias=False)
        self.fc2 = nn.Linear(ffn, width, bias=False)

    def forward(self, x, rotary):
        batch, length, width = x.shape
        head_dim = width // self.heads
        qkv = self.qkv(self.input_norm(x)).view(batch, length, 3, self.heads, head_dim)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        q, k = q * rotary, k * rotary  # npu_rotary_mul: one kernel each
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dense(attention.transpose(1, 2).reshape(batch, length, width))
        # fc1's output is [gate | up]; GLU (one kernel) stands in for npu_swiglu on it.
        return x + self.fc2(F.glu(self.fc1(self.post_norm(x)), dim=-1))


def layer_parameters(s: Setup) -> int:
    return 2 * s.width + 4 * s.width * s.width + 3 * s.width * s.ffn


def _timed(work) -> float:
    """Simulated seconds of `work`, from an idle device to the end of its last kernel."""
    torch.npu.synchronize()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def stage_times(s: Setup) -> dict[str, float]:
    """Seconds of one micro-batch (forward + backward) for one layer and for the stage extras."""
    with npusim.estimate(), torch.device("npu"):
        torch.set_default_dtype(s.dtype)
        try:
            layer = DecoderLayer(s.width, s.heads, s.ffn)
            rotary = torch.empty(s.seq, s.width // s.heads)
            x = torch.empty(s.micro_batch, s.seq, s.width, requires_grad=True)

            def layer_step():
                # Each micro-batch's weight gradients start fresh: Megatron fuses their
                # accumulation into the weight-gradient matmul (gradient_accumulation_fusion).
                layer.zero_grad(set_to_none=True)
                x.grad = None
                layer(x, rotary).backward(torch.empty(s.micro_batch, s.seq, s.width))

            layer_step()  # warm: first-call effects stay out of the figure
            layer_s = _timed(layer_step)
            del layer

            embedding = nn.Embedding(s.vocab, s.width)
            tokens = torch.randint(0, s.vocab, (s.micro_batch, s.seq))

            def first_extra():
                embedding.zero_grad(set_to_none=True)
                embedding(tokens).backward(torch.empty(s.micro_batch, s.seq, s.width))

            first_extra()
            first_s = _timed(first_extra)
            del embedding

            norm = FusedRMSNorm(s.width)
            head = nn.Linear(s.width, s.vocab, bias=False)
            hidden = torch.empty(s.micro_batch, s.seq, s.width, requires_grad=True)

            def last_extra():
                norm.zero_grad(set_to_none=True)
                head.zero_grad(set_to_none=True)
                hidden.grad = None
                logits = head(norm(hidden))
                F.cross_entropy(logits.float().view(-1, s.vocab), tokens.view(-1)).backward()

            last_extra()
            last_s = _timed(last_extra)
            del norm, head
        finally:
            torch.set_default_dtype(torch.float32)
    return {"layer": layer_s, "first_extra": first_s, "last_extra": last_s}


def optimizer_seconds(shard_parameters: int) -> float:
    """The distributed optimizer's step on one rank: fused AdamW over its fp32 shard (master
    weights, fp32 gradients, two moments), then the cast of the shard back to the bf16 weights."""
    with npusim.estimate(), torch.device("npu"):
        master = nn.Parameter(torch.empty(shard_parameters))
        master.grad = torch.empty(shard_parameters)
        optimizer = torch.optim.AdamW([master], lr=1e-4, fused=True)
        optimizer.step()  # creates the states
        half = torch.empty(shard_parameters, dtype=torch.bfloat16)
        return _timed(lambda: (optimizer.step(), half.copy_(master)))


def estimate(s: Setup, layers: int | None = None) -> dict[str, float]:
    """Tokens per second per NPU for a setup, with the parts of the step."""
    times = stage_times(s)
    layers = layers or s.layers
    per_stage = layers / s.pp
    first = per_stage * times["layer"] + times["first_extra"]
    last = per_stage * times["layer"] + times["last_extra"]
    if s.pp == 1:
        first = last = per_stage * times["layer"] + times["first_extra"] + times["last_extra"]
    slowest = max(first, last)
    pipeline = (s.micro_batches + s.pp - 1) * slowest
    stage_parameters = int(per_stage * layer_parameters(s) + s.vocab * s.width)  # the larger stage
    optimizer = optimizer_seconds(math.ceil(stage_parameters / s.dp))
    bus = DP_BUS_BYTES_PER_S[s.dp]
    ring = (s.dp - 1) / s.dp
    dp_comm = ring * stage_parameters * 4 / bus + ring * stage_parameters * 2 / bus  # RS fp32 grads + AG bf16
    step = pipeline + optimizer + dp_comm
    tokens = s.global_batch * s.seq
    return {
        "layer_s": times["layer"], "first_stage_s": first, "last_stage_s": last, "pipeline_s": pipeline,
        "optimizer_s": optimizer, "dp_comm_s": dp_comm, "step_s": step,
        "tokens_per_s_per_npu": tokens / step / s.npus,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SETUPS), default="llama2-7b")
    parser.add_argument("--layers", type=int, default=None, help="override the layer count (a smaller model)")
    args = parser.parse_args()
    s = SETUPS[args.model]
    started = time.perf_counter()
    r = estimate(s, args.layers)
    print(f"{s.name} pretraining as published ({s.source}): sequence {s.seq}, micro-batch {s.micro_batch}, "
          f"global batch {s.global_batch}, {s.micro_batches} micro-batches per step")
    print(f"  one layer, forward + backward of one micro-batch: {r['layer_s'] * 1e3:.1f} ms")
    print(f"  stages: first {r['first_stage_s'] * 1e3:.0f} ms, last {r['last_stage_s'] * 1e3:.0f} ms; pipeline "
          f"({s.micro_batches} + {s.pp} - 1) x slowest = {r['pipeline_s']:.2f} s")
    print(f"  optimizer shard {r['optimizer_s'] * 1e3:.0f} ms; data-parallel ring (reduce-scatter + all-gather, "
          f"not overlapped) {r['dp_comm_s'] * 1e3:.0f} ms")
    print(f"  step {r['step_s']:.2f} s -> {r['tokens_per_s_per_npu']:.0f} tokens/s per NPU "
          f"(published: {s.reference_tokens_per_s:.0f})")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()

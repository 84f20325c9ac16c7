"""Estimate LLaMA pretraining throughput per Ascend 910B NPU, as MindSpeed-LLM runs it, on any laptop.

The default is MindSpeed-LLM's published LLaMA-2-7B pretraining setup: 8 NPUs, tensor parallel 1,
pipeline parallel 2, data parallel 4, sequence 4096, micro-batch 1, global batch 256, bf16 weights,
flash attention, fused RMSNorm / SwiGLU / rotary kernels and the distributed optimizer
(MindSpeed-LLM ``pretrain_llama2_7b_ptd.sh``: ``--use-flash-attn --use-fused-rmsnorm
--use-fused-swiglu --use-fused-rotary-pos-emb --use-distributed-optimizer --overlap-grad-reduce
--no-gradient-accumulation-fusion``).

How it is estimated (all in ``npusim.estimate()``: tensors have shapes and device memory but no
data, so nothing needs the host memory of a 7B model):

1. One decoder layer runs forward and backward for one micro-batch on the simulated chip, built
   from the torch_npu kernels MindSpeed-LLM calls: ``torch_npu.npu_rms_norm``,
   ``torch_npu.npu_rotary_mul``, ``torch_npu.npu_fusion_attention`` (causal, ``sparse_mode=3``
   with the 2048x2048 mask) and ``torch_npu.npu_swiglu``, around the fused QKV, dense, gate/up and
   down projections. Setups whose script lacks ``--use-fused-rotary-pos-emb`` / ``--use-fused-swiglu``
   (ModelLink's LLaMA-7B/13B) run Megatron's aten rotary and SwiGLU instead. Without
   gradient-accumulation fusion each micro-batch's weight gradients are added into the fp32
   ``main_grad`` buffers (one ``add_`` per weight). The first pipeline stage adds the embedding, the
   last the final norm, the output layer and Megatron's vocab-parallel cross-entropy on fp32 logits.
2. Pipeline send/receive of the activations (forward) and their gradients (backward) between
   stages is priced by npusim's collective model (HCCS inside the 8-NPU server) and adds to each
   micro-batch of a stage.
3. The pipeline (1F1B) takes ``(m + PP - 1) x slowest stage`` with ``m = global / (DP x micro)``
   micro-batches, then the optimizer step on this rank's shard (the distributed optimizer splits
   the fp32 master weights and Adam states over DP): with fp16 the loss scaler's unscale of the
   gradients, ``--clip-grad``'s gradient norm, fused AdamW on ``stage parameters / DP`` and the cast
   of the shard back to the half-precision weights.
4. Data-parallel communication, priced by npusim's collective model (``npusim.distributed.
   price_collective``: full mesh over HCCS inside a server): the reduce-scatter of the fp32 gradient
   buffer, overlapped with the last micro-batch's backward (``--overlap-grad-reduce``; only what
   exceeds that backward is exposed), and the all-gather of the updated half-precision parameters
   after the optimizer step (not overlapped).

The chip is npusim's (``NPUSIM_SOC``, the 910B2 by default). The published figures name only the server
(Atlas 900 A2 PoDc / Atlas 800T A2), which Huawei offers with a 376 TFLOPS (24 AI cores, the 910B2) or
a 313 TFLOPS (20 AI cores, the 910B3) NPU; ``NPUSIM_SOC=Ascend910B3`` estimates the latter
(bench/validate_performance.py compares both with the published figures).

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
    # Flags of the published script that change the work of a step (cited in SETUPS).
    fused_rotary: bool = True   # --use-fused-rotary-pos-emb: torch_npu.npu_rotary_mul, else Megatron's aten rotary
    fused_swiglu: bool = True   # --use-fused-swiglu: torch_npu.npu_swiglu, else Megatron's chunk + silu + mul

    @property
    def npus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)


# Each setup is the one its published figure was measured with. None of the three scripts turns on
# activation recomputation; all three use --use-flash-attn, --use-fused-rmsnorm,
# --no-gradient-accumulation-fusion, --clip-grad 1.0, --untie-embeddings-and-output-weights and
# --make-vocab-size-divisible-by 1 (vocabulary 32000).
SETUPS = {
    # Script: zzhx1/Hetaceso-ModelLink (a ModelLink/MindSpeed-LLM fork) examples/llama2/pretrain_llama2_7b_ptd.sh
    # @ fac53894155a84a638c547809650df29b86697c9 (the same as examples/legacy/llama2/... @ eb6ef3fa5b88): TP1 PP2
    # (DP4 on 8 NPUs), seq 4096, mbs 1, gbs 256, --bf16, --use-fused-swiglu --use-fused-rotary-pos-emb
    # --use-distributed-optimizer --overlap-grad-reduce. The figure: that repository's README_en.md
    # @ 0141fec76254e1a4e3534b0925974072f714ee7d lists "LLaMA2 | 7B | 1x8 | BF16 | 4200 | 3850 (reference)" and
    # links this script; 4241 (the figure) was found in no stored LLaMA-2 row, only as Qwen2-7B's
    # reference-column figure in a later ModelLink README. The two differ by 1%.
    "llama2-7b": Setup("LLaMA-2-7B", 32, 4096, 32, 11008, 32000, 4096, 1, 256, 1, 2, 4, torch.bfloat16, 4241,
                       "MindSpeed-LLM legacy pretrain_llama2_7b_ptd.sh, 8x 910B, TP1 PP2 DP4, bf16"),
    # Figure: zzhx1/Hetaceso-ModelLink examples/llama/README_en.md @ 156aacc34660352757f59d712bf2838d4b77b5a7,
    # "NPUs | 910 1*8p | LLaMA-7B | 2048 | 1.75 | 3600 | 18.2 s/step" (also README_en.md @ 0141fec76254: "LLaMA |
    # 7B | 1x8 | FP16 | 3600 | 3804"); launched with
    # examples/llama/pretrain_llama_7b_ptd.sh (@ 1744e24ca2d3422a52796c4dcd0edf5a77c19a56): TP1 PP8, seq 2048,
    # mbs 4, gbs 256, --fp16; no --use-fused-swiglu, no --use-fused-rotary-pos-emb (Megatron's aten SwiGLU and
    # rotary), no --use-distributed-optimizer, no --overlap-grad-reduce (DP is 1, so neither matters).
    "llama-7b": Setup("LLaMA-7B", 32, 4096, 32, 11008, 32000, 2048, 4, 256, 1, 8, 1, torch.float16, 3600,
                      "ModelLink pretrain_llama_7b_ptd.sh, 8x 910B, TP1 PP8, fp16", False, False),
    # Figure: same README, "NPUs | 910 1*8p | LLaMA-13B | 2048 | 0.92 | 1895 | 17.2 s/step"; launched with
    # examples/llama/pretrain_llama_13b_ptd.sh, whose only stored version (@ 0a61f7f3cce35e6d3d2f64f8ddea76e4859fc172)
    # has TP1 PP8, seq 2048, mbs 1, gbs 128, --bf16, the same flags as the 7B script otherwise. The top-level
    # README_en.md @ 0141fec76254 lists the row as "13B | 1x8 | FP16 | 1895 | 2012"; the script is followed here
    # (fp16 instead estimates 0.4% more tokens/s).
    "llama-13b": Setup("LLaMA-13B", 40, 5120, 40, 13824, 32000, 2048, 1, 128, 1, 8, 1, torch.bfloat16, 1895,
                       "ModelLink pretrain_llama_13b_ptd.sh, 8x 910B, TP1 PP8, bf16", False, False),
}

class DecoderLayer(nn.Module):
    """A Megatron/MindSpeed-LLM LLaMA layer on torch_npu's fused kernels: npu_rms_norm, fused QKV,
    npu_rotary_mul, npu_fusion_attention (causal), dense, fused gate/up with npu_swiglu, down."""

    def __init__(self, width: int, heads: int, ffn: int, eps: float = 1e-5, fused_rotary: bool = True,
                 fused_swiglu: bool = True):
        super().__init__()
        self.heads, self.eps = heads, eps
        self.fused_rotary, self.fused_swiglu = fused_rotary, fused_swiglu
        self.input_norm = nn.Parameter(torch.ones(width))
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.dense = nn.Linear(width, width, bias=False)
        self.post_norm = nn.Parameter(torch.ones(width))
        self.fc1 = nn.Linear(width, 2 * ffn, bias=False)
        self.fc2 = nn.Linear(ffn, width, bias=False)

    def forward(self, x, cos, sin, mask):
        import torch_npu

        batch, length, width = x.shape
        head_dim = width // self.heads
        h = torch_npu.npu_rms_norm(x, self.input_norm, epsilon=self.eps)[0]
        q, k, v = self.qkv(h).view(batch, length, 3, self.heads, head_dim).unbind(2)
        q, k = self._rotary(q, cos, sin), self._rotary(k, cos, sin)
        attention = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSND", atten_mask=mask,
                                                   scale=head_dim ** -0.5, sparse_mode=3)[0]
        x = x + self.dense(attention.reshape(batch, length, width))
        h = torch_npu.npu_rms_norm(x, self.post_norm, epsilon=self.eps)[0]
        return x + self.fc2(self._swiglu(self.fc1(h)))

    def _rotary(self, t, cos, sin):
        import torch_npu

        if self.fused_rotary:
            return torch_npu.npu_rotary_mul(t, cos, sin)
        # Megatron's unfused rotary (NVIDIA/Megatron-LM megatron/model/rotary_pos_embedding.py,
        # apply_rotary_pos_emb, used by ModelLink's legacy pretrain_gpt.py without --use-fused-rotary-pos-emb):
        # split off the rotated part, t * cos + rotate_half(t) * sin with rotate_half(x) = cat(-x2, x1), then
        # cat with the (here empty) unrotated part.
        rotated, passed = t[..., :t.shape[-1]], t[..., t.shape[-1]:]
        first, second = torch.chunk(rotated, 2, dim=-1)
        rotated = rotated * cos + torch.cat((-second, first), dim=-1) * sin
        return torch.cat((rotated, passed), dim=-1)

    def _swiglu(self, x):
        import torch_npu

        if self.fused_swiglu:
            return torch_npu.npu_swiglu(x, dim=-1)
        # Megatron's unfused swiglu (NVIDIA/Megatron-LM megatron/model/transformer.py, ParallelMLP with
        # --swiglu): chunk, silu, multiply.
        gate, up = torch.chunk(x, 2, dim=-1)
        return F.silu(gate) * up


class VocabParallelCrossEntropy(torch.autograd.Function):
    """The loss all three scripts compute: Megatron's vocab-parallel cross-entropy on the fp32 logits
    (NVIDIA/Megatron-LM megatron/core/tensor_parallel/cross_entropy.py, _VocabParallelCrossEntropy, called by
    the GPT model's post_language_model_processing on ``output.float()``; its all-reduces are over the tensor
    parallel group, of one rank here). It runs as separate aten kernels: max, subtract, gather of the target
    logit, exp, sum, log, divide; backward: the saved softmax, minus one at the targets, times the loss gradient."""

    @staticmethod
    def forward(ctx, logits, target):
        vocab = logits.shape[-1]
        logits = logits - torch.max(logits, dim=-1)[0].unsqueeze(-1)
        logits_2d = logits.view(-1, vocab)
        target_1d = target.reshape(-1)
        rows = torch.arange(logits_2d.shape[0], device=logits.device)
        predicted = logits_2d[rows, target_1d].clone().contiguous().view_as(target)
        exp_logits = torch.exp(logits, out=logits)
        sum_exp = exp_logits.sum(dim=-1)
        loss = torch.log(sum_exp) - predicted
        exp_logits.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(exp_logits, target_1d)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target_1d = ctx.saved_tensors
        grad_2d = softmax.view(-1, softmax.shape[-1])
        rows = torch.arange(grad_2d.shape[0], device=softmax.device)
        grad_2d[rows, target_1d] -= 1.0
        softmax.mul_(grad_output.unsqueeze(-1))
        return softmax, None


def layer_parameters(s: Setup) -> int:
    return 2 * s.width + 4 * s.width * s.width + 3 * s.width * s.ffn


def timed_seconds(work) -> float:
    """Simulated seconds of `work`, from an idle device to the end of its last kernel."""
    torch.npu.synchronize()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _accumulate_main_grads(module: nn.Module, main_grads: dict) -> None:
    """Megatron without gradient-accumulation fusion: each weight's gradient of a micro-batch is
    added into its fp32 main_grad buffer by one in-place add."""
    for name, p in module.named_parameters():
        if p.grad is not None:
            main_grads[name].add_(p.grad)


def stage_times(s: Setup) -> dict[str, float]:
    """Seconds of one micro-batch (forward + backward) for one layer and for the stage extras."""
    with npusim.estimate(), torch.device("npu"):
        torch.set_default_dtype(s.dtype)
        try:
            layer = DecoderLayer(s.width, s.heads, s.ffn, fused_rotary=s.fused_rotary, fused_swiglu=s.fused_swiglu)
            main_grads = {n: torch.empty(p.shape, dtype=torch.float32) for n, p in layer.named_parameters()}
            head_dim = s.width // s.heads
            cos = torch.empty(1, s.seq, 1, head_dim)
            sin = torch.empty(1, s.seq, 1, head_dim)
            mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)  # sparse_mode 3's mask
            x = torch.empty(s.micro_batch, s.seq, s.width, requires_grad=True)

            def layer_step():
                layer.zero_grad(set_to_none=True)
                x.grad = None
                layer(x, cos, sin, mask).backward(torch.empty(s.micro_batch, s.seq, s.width))
                _accumulate_main_grads(layer, main_grads)

            layer_step()  # warm: first-call effects stay out of the figure
            layer_s = timed_seconds(layer_step)
            del layer, main_grads

            embedding = nn.Embedding(s.vocab, s.width)
            embedding_main = {n: torch.empty(p.shape, dtype=torch.float32) for n, p in embedding.named_parameters()}
            tokens = torch.randint(0, s.vocab, (s.micro_batch, s.seq))

            def first_extra():
                embedding.zero_grad(set_to_none=True)
                embedding(tokens).backward(torch.empty(s.micro_batch, s.seq, s.width))
                _accumulate_main_grads(embedding, embedding_main)

            first_extra()
            first_s = timed_seconds(first_extra)
            del embedding, embedding_main

            import torch_npu

            norm = nn.Parameter(torch.ones(s.width))
            head = nn.Linear(s.width, s.vocab, bias=False)
            head_main = {n: torch.empty(p.shape, dtype=torch.float32) for n, p in head.named_parameters()}
            hidden = torch.empty(s.micro_batch, s.seq, s.width, requires_grad=True)
            loss_mask = torch.empty(s.micro_batch * s.seq, dtype=torch.float32)

            def last_extra():
                norm.grad = None
                head.zero_grad(set_to_none=True)
                hidden.grad = None
                logits = head(torch_npu.npu_rms_norm(hidden, norm, epsilon=1e-5)[0])
                losses = VocabParallelCrossEntropy.apply(logits.float(), tokens)
                (torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()).backward()
                _accumulate_main_grads(head, head_main)

            last_extra()
            last_s = timed_seconds(last_extra)
            del norm, head, head_main
        finally:
            torch.set_default_dtype(torch.float32)
    return {"layer": layer_s, "first_extra": first_s, "last_extra": last_s}


def optimizer_seconds(shard_parameters: int, dtype: torch.dtype) -> float:
    """Megatron's mixed-precision optimizer step on one rank's fp32 shard (the whole stage where DP is 1):
    with --fp16, the dynamic loss scaler's unscale and inf/nan check of the fp32 gradients
    (_unscale_main_grads_and_check_for_nan); --clip-grad 1.0's gradient norm (clip_grad_norm_fp32; the
    scaling it may apply depends on the values and is left out); fused AdamW over master weights, gradients and
    two moments; the copy of the updated master weights back to the half-precision weights."""
    with npusim.estimate(), torch.device("npu"):
        master = nn.Parameter(torch.empty(shard_parameters))
        master.grad = torch.empty(shard_parameters)
        optimizer = torch.optim.AdamW([master], lr=1e-4, fused=True)
        optimizer.step()  # creates the states
        half = torch.empty(shard_parameters, dtype=dtype)
        inv_scale = torch.ones(1)
        found_inf = torch.zeros(1)

        def step():
            if dtype == torch.float16:
                # On a 910B (INF_NAN mode) the check is one kernel that reads and rewrites every gradient.
                torch._amp_foreach_non_finite_check_and_unscale_([master.grad], found_inf, inv_scale)
            torch.linalg.vector_norm(master.grad)
            optimizer.step()
            half.copy_(master)

        step()
        return timed_seconds(step)


def _collective_seconds(op: str, nbytes: float, group: int) -> float:
    """One HCCL collective of a `group` of ranks inside one 8-NPU 910B server (npusim's model)."""
    from npusim.distributed import price_collective

    if group <= 1 and op != "send_recv":
        return 0.0
    return price_collective(op, int(nbytes), max(2, group), 8)[0]


def estimate(s: Setup, layers: int | None = None) -> dict[str, float]:
    """Tokens per second per NPU for a setup, with the parts of the step."""
    times = stage_times(s)
    layers = layers or s.layers
    per_stage = layers / s.pp
    element = torch.finfo(s.dtype).bits // 8
    # Pipeline send/receive: the activation forward and its gradient backward, one each per
    # micro-batch of a stage that has a neighbour (HCCS peer link).
    activation = s.micro_batch * s.seq * s.width * element
    p2p = 2 * _collective_seconds("send_recv", activation, 2) if s.pp > 1 else 0.0
    first = per_stage * times["layer"] + times["first_extra"] + p2p
    last = per_stage * times["layer"] + times["last_extra"] + p2p
    if s.pp == 1:
        first = last = per_stage * times["layer"] + times["first_extra"] + times["last_extra"]
    slowest = max(first, last)
    pipeline = (s.micro_batches + s.pp - 1) * slowest
    stage_parameters = int(per_stage * layer_parameters(s) + s.vocab * s.width)  # the larger stage
    optimizer = optimizer_seconds(math.ceil(stage_parameters / s.dp), s.dtype)
    # Distributed optimizer: reduce-scatter of the fp32 main_grad buffer, overlapped with the last
    # micro-batch's backward (about 2/3 of a stage's micro-batch), then all-gather of the updated
    # half-precision parameters after the step.
    reduce_scatter = _collective_seconds("reduce_scatter", stage_parameters * 4, s.dp)
    exposed_reduce_scatter = max(0.0, reduce_scatter - slowest * 2 / 3)
    all_gather = _collective_seconds("allgather", stage_parameters * element, s.dp)
    dp_comm = exposed_reduce_scatter + all_gather
    step = pipeline + optimizer + dp_comm
    tokens = s.global_batch * s.seq
    return {
        "layer_s": times["layer"], "first_stage_s": first, "last_stage_s": last, "pipeline_s": pipeline,
        "optimizer_s": optimizer, "p2p_s": p2p, "reduce_scatter_s": reduce_scatter, "all_gather_s": all_gather,
        "dp_comm_s": dp_comm, "step_s": step, "tokens_per_s_per_npu": tokens / step / s.npus,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SETUPS), default="llama2-7b")
    parser.add_argument("--layers", type=int, default=None, help="override the layer count (a smaller model)")
    args = parser.parse_args()
    s = SETUPS[args.model]
    started = time.perf_counter()
    r = estimate(s, args.layers)
    from npusim import _C

    print(f"{s.name} pretraining as published ({s.source}): sequence {s.seq}, micro-batch {s.micro_batch}, "
          f"global batch {s.global_batch}, {s.micro_batches} micro-batches per step; on an "
          f"{_C._chip_info()['soc_name']}")
    print(f"  one layer, forward + backward of one micro-batch: {r['layer_s'] * 1e3:.1f} ms")
    print(f"  stages: first {r['first_stage_s'] * 1e3:.0f} ms, last {r['last_stage_s'] * 1e3:.0f} ms; pipeline "
          f"({s.micro_batches} + {s.pp} - 1) x slowest = {r['pipeline_s']:.2f} s")
    print(f"  pipeline send/receive per micro-batch {r['p2p_s'] * 1e3:.2f} ms; optimizer shard "
          f"{r['optimizer_s'] * 1e3:.0f} ms; data parallel: reduce-scatter {r['reduce_scatter_s'] * 1e3:.0f} ms "
          f"(overlapped with the last backward), all-gather {r['all_gather_s'] * 1e3:.0f} ms, exposed "
          f"{r['dp_comm_s'] * 1e3:.0f} ms")
    print(f"  step {r['step_s']:.2f} s -> {r['tokens_per_s_per_npu']:.0f} tokens/s per NPU "
          f"(published: {s.reference_tokens_per_s:.0f})")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()

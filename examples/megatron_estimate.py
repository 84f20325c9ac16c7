"""Estimate the pretraining throughput per Ascend NPU of a Megatron / MindSpeed-LLM setup, on any laptop.

A setup (:class:`Setup`) is a published pretraining script: the model (layers, width, heads, GQA groups,
head size, FFN, vocabulary, norm, activation, biases, rotary share, sliding window, experts) and the flags
that change the work of a step (TP / PP / EP, sequence parallel, micro and global batch, dtype, fused
kernels, MC2, recomputation, distributed optimizer and its overlaps, gradient-accumulation fusion).
``examples/megatron_setups.py`` holds the published ones, each cited with repository, file and commit.

How a step is estimated (all in ``npusim.estimate()``: shapes and device memory, no data):

1. One transformer layer of one tensor-parallel rank runs forward and backward for one micro-batch on
   the simulated chip, built as Megatron-core / MindSpeed-LLM run it in the SBH layout: the norm
   (``torch_npu.npu_rms_norm``, or Megatron's unfused RMSNorm, or LayerNorm), the column-parallel QKV
   projection, the split of its output into q, k, v (a copy where the split cannot be a view), rotary
   embedding on the rotated share of the head (``torch_npu.npu_rotary_mul`` or Megatron's unfused
   rotary), ``torch_npu.npu_fusion_attention`` in SBH with the mask and ``sparse_mode`` MindSpeed-LLM
   passes (4 = band from the bottom right with the 2048x2048 compressed mask above 2K tokens, 0 with
   the full mask below; ``pre_tockens`` = the sliding window where there is one), the row-parallel
   dense projection, the residual add, and the MLP (fused SwiGLU ``torch_npu.npu_swiglu``, or
   Megatron's chunk + silu + mul, GeGLU's tanh-GELU + mul, or GELU), or the MoE block (router,
   top-k, permutation, ``torch_npu.npu_grouped_matmul`` experts). Without gradient-accumulation
   fusion each weight gradient is added into its ``main_grad`` buffer (fp32 with bf16, the parameter
   dtype with fp16, as Megatron's ``accumulate_allreduce_grads_in_fp32`` does). Full recomputation
   runs the forward of the recomputed layers once more in the backward.
2. Tensor-parallel communication is priced by npusim's HCCL model and exposed as Megatron and
   MindSpeed schedule it (:func:`tensor_parallel_exposed_seconds`): with sequence parallelism, an
   all-gather before each column-parallel and a reduce-scatter after each row-parallel projection
   in the forward; in the backward the re-gather of the input overlaps the input-gradient GEMM and
   the reduce-scatter of the input gradient overlaps the weight-gradient GEMM. With MC2
   (``--use-mc2``: ``npu_all_gather_base_mm`` / ``npu_mm_reduce_scatter_base``) each collective is
   fused with its GEMM and only what exceeds the GEMM shows.
3. The first pipeline stage adds the vocabulary-parallel embedding, the last the final norm, the
   output layer and Megatron's vocab-parallel cross-entropy on fp32 logits. Pipeline send/receive is
   priced per micro-batch. The 1F1B pipeline takes ``(m + PP - 1) x slowest stage``, interleaved
   ``(m + (PP - 1) / v) x slowest stage`` for v virtual stages.
4. Data-parallel communication (reduce-scatter of the gradient buffer and all-gather of the
   parameters with the distributed optimizer, else an all-reduce) overlaps the last micro-batch's
   backward where ``--overlap-grad-reduce`` says so and the next forward with
   ``--overlap-param-gather``; the optimizer step runs on this rank's shard.

    npusim run examples/megatron_estimate.py [--model KEY] [--layers N]   (default: llama2-7b)
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

# The NPU the published end-to-end figures were measured on. They name only the server, "Atlas 900 A2 PoDc",
# which ships with a 313 T (20 AI cores, npusim's Ascend910B3) or a 376 T (24 cores, Ascend910B2) NPU; the 29
# rows of bench/validate_performance.py decide it: on the 20-core part their median error is 7%, on the
# 24-core part every family is 11-32% too fast (the 24/20 core ratio in the compute-bound work). npusim's own
# default stays the Ascend910B2 (the chip its kernel references were measured on); the estimate scripts
# simulate this one unless NPUSIM_SOC or --chip names another.
PUBLISHED_NPU = "Ascend910B3"

# FlashAttention's compressed causal mask (MindSpeed-LLM FA_COMPRESSED_MASK_LEN): above this many
# tokens the band mode 4 with the 2048x2048 mask, at or below it sparse_mode 0 with the full mask.
COMPRESSED_MASK = 2048
# MindSpeed-LLM's defaults of --pre-tockens / --next-tockens.
PRE_TOCKENS, NEXT_TOCKENS = 65536, 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Setup:
    """A published pretraining setup: the model and the script flags that change the work of a step."""

    key: str
    name: str
    family: str
    reference_tokens_per_s: float  # per NPU, as published
    source: str
    # The model.
    layers: int
    width: int
    heads: int
    ffn: int
    vocab: int                      # padded vocabulary
    kv_groups: int = 0              # --num-query-groups (0: one per head)
    head_dim: int = 0               # --kv-channels (0: width / heads)
    norm: str = "rms"               # "rms" or "layer"
    activation: str = "swiglu"      # "swiglu", "geglu" or "gelu"
    qkv_bias: bool = False          # --add-qkv-bias
    dense_bias: bool = False        # --add-dense-bias
    rotary_fraction: float = 1.0    # --rotary-percent / --use-partial-rope share of the head that rotates
    tied_embeddings: bool = False   # no --untie-embeddings-and-output-weights
    embedding_scale: bool = False   # --input-embeds-norm (Gemma) / --scale-emb (MiniCPM): embeddings times a scale
    depth_scale: bool = False       # --scale-depth (MiniCPM): attention and MLP outputs times a scale
    logit_scale: bool = False       # --dim-model-base (MiniCPM): final hidden states divided by width / base
    sliding_window: int = 0         # --sliding-window
    experts: int = 0                # --num-experts
    topk: int = 0                   # --moe-router-topk
    # The run.
    seq: int
    micro_batch: int
    global_batch: int
    tp: int = 1
    pp: int = 1
    ep: int = 1
    npus: int = 8
    dtype: torch.dtype = torch.bfloat16
    vpp_layers: int = 0                      # --num-layers-per-virtual-pipeline-stage
    sequence_parallel: bool = False          # --sequence-parallel (takes effect with TP > 1)
    fused_rmsnorm: bool = False              # --use-fused-rmsnorm
    fused_rotary: bool = False               # --use-fused-rotary-pos-emb (and not --no-rope-fusion)
    fused_swiglu: bool = False               # --use-fused-swiglu
    mc2: bool = False                        # --use-mc2
    distributed_optimizer: bool = False      # --use-distributed-optimizer
    overlap_grad_reduce: bool = False        # --overlap-grad-reduce
    overlap_param_gather: bool = False       # --overlap-param-gather
    gradient_accumulation_fusion: bool = True  # unless --no-gradient-accumulation-fusion
    recompute_layers: int = 0                # --recompute-granularity full: layers recomputed per stage
    recompute_activation: bool = False       # --recompute-activation-function
    moe_grouped_gemm: bool = False           # --moe-grouped-gemm
    # ModelLink's legacy (non-mcore) model with AscendSpeed's flash attention (scripts of early 2024): q, k, v
    # transposed to [b, s] and back to SBH around npu_fusion_attention, the full S x S mask with sparse_mode 0.
    legacy_attention: bool = False
    # ModelLink before the compressed mask (spring 2024): the full S x S causal mask with sparse_mode 0 (implied by
    # legacy_attention).
    full_mask: bool = False
    # Evidence that the published figure's run had MC2 off although the script passes --use-mc2 (the code of that
    # commit sets args.use_mc2 = False unless edited); the row says what the evidence is.
    figure_without_mc2: bool = False

    @property
    def dp(self) -> int:
        return self.npus // (self.tp * self.pp)

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def head_size(self) -> int:
        return self.head_dim or self.width // self.heads

    @property
    def groups(self) -> int:
        return self.kv_groups or self.heads

    @property
    def gated(self) -> bool:
        return self.activation in ("swiglu", "geglu")

    @property
    def sp(self) -> bool:
        return self.sequence_parallel and self.tp > 1

    @property
    def mc2_active(self) -> bool:
        """MC2's fused GEMM + collective kernels run (they need sequence parallelism)."""
        return self.mc2 and self.sp and not self.figure_without_mc2

    @property
    def compressed_mask(self) -> bool:
        """MindSpeed-LLM's 2048 x 2048 mask with sparse_mode 4 above 2048 tokens."""
        return self.seq > COMPRESSED_MASK and not (self.legacy_attention or self.full_mask)

    @property
    def element(self) -> int:
        return torch.finfo(self.dtype).bits // 8

    @property
    def main_grad_dtype(self) -> torch.dtype:
        # Megatron: bf16 forces accumulate_allreduce_grads_in_fp32; fp16 keeps the parameter dtype.
        return torch.float32 if self.dtype == torch.bfloat16 else self.dtype

    def layer_parameters(self) -> int:
        """Parameters of one layer (all ranks)."""
        d = self.head_size
        attention = self.width * (self.heads + 2 * self.groups) * d + self.heads * d * self.width
        attention += (self.heads + 2 * self.groups) * d if self.qkv_bias else 0
        mlp = self.width * self.ffn * (3 if self.gated else 2)
        if self.experts:
            mlp = mlp * self.experts + self.width * self.experts
        norms = 2 * self.width * (2 if self.norm == "layer" else 1)
        return attention + mlp + norms


class _ShapeOnly(torch.autograd.Function):
    """A tensor-parallel collective as the compute stream sees it: a new tensor of the gathered or
    scattered shape (the collective's time is priced apart, by tensor_parallel_exposed_seconds)."""

    @staticmethod
    def forward(ctx, x, dim, factor):
        ctx.dim, ctx.factor, ctx.shape = dim, factor, x.shape
        shape = list(x.shape)
        shape[dim] = int(shape[dim] * factor)
        return x.new_empty(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.new_empty(ctx.shape), None, None


def _gather(x, s: Setup):
    return _ShapeOnly.apply(x, 0, s.tp) if s.sp else x


def _scatter(x, s: Setup):
    return _ShapeOnly.apply(x, 0, 1.0 / s.tp) if s.sp else x


class Norm(nn.Module):
    def __init__(self, s: Setup):
        super().__init__()
        self.s = s
        self.weight = nn.Parameter(torch.ones(s.width))
        self.bias = nn.Parameter(torch.zeros(s.width)) if s.norm == "layer" else None

    def forward(self, x):
        import torch_npu

        if self.s.norm == "layer":
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)
        if self.s.fused_rmsnorm:
            return torch_npu.npu_rms_norm(x, self.weight, epsilon=1e-6)[0]
        # Megatron's RMSNorm (megatron/legacy/model/rms_norm.py): in fp32, then back and times the weight.
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
        return y.type_as(x) * self.weight


class MegatronLayer(nn.Module):
    """One transformer layer of one tensor-parallel rank, in Megatron-core's [s, b, h] layout."""

    def __init__(self, s: Setup):
        super().__init__()
        self.s = s
        d = s.head_size
        self.n = s.heads // s.tp
        self.g = max(1, s.groups // s.tp)
        self.input_norm = Norm(s)
        self.qkv = nn.Linear(s.width, (self.n + 2 * self.g) * d, bias=s.qkv_bias)
        self.dense = nn.Linear(self.n * d, s.width, bias=s.dense_bias)
        self.post_norm = Norm(s)
        f = s.ffn // s.tp
        if s.experts:
            self.router = nn.Linear(s.width, s.experts, bias=False)
            local = s.experts // s.ep
            self.w1 = nn.Parameter(torch.empty(local, s.width, 2 * f if s.gated else f))
            self.w2 = nn.Parameter(torch.empty(local, f, s.width))
        else:
            self.fc1 = nn.Linear(s.width, 2 * f if s.gated else f, bias=False)
            self.fc2 = nn.Linear(f, s.width, bias=False)

    def forward(self, x, cos, sin, mask):
        s = self.s
        h = _gather(self.input_norm(x), s)
        attention = _scatter(self.dense(self._attention(self.qkv(h), cos, sin, mask)), s)
        if s.depth_scale:
            attention = attention * (1.4 / math.sqrt(s.layers))
        x = x + attention
        h = _gather(self.post_norm(x), s)
        mlp = _scatter(self._moe(h) if s.experts else self.fc2(self._activation(self.fc1(h))), s)
        if s.depth_scale:
            mlp = mlp * (1.4 / math.sqrt(s.layers))
        return x + mlp

    def _attention(self, qkv, cos, sin, mask):
        import torch_npu

        s = self.s
        seq, batch, d = qkv.shape[0], qkv.shape[1], s.head_size
        per_group = self.n // self.g
        # Megatron-core: [s, b, ng, (np/ng + 2) hn], split along the last dim, query reshaped to np heads.
        q, k, v = torch.split(qkv.view(seq, batch, self.g, (per_group + 2) * d), [per_group * d, d, d], dim=3)
        q = q.reshape(seq, batch, self.n, d)
        q, k = self._rotary(q, cos, sin), self._rotary(k, cos, sin)
        if s.legacy_attention:
            # ModelLink's bundled legacy Megatron (megatron/model/transformer.py ParallelAttention.forward):
            # q, k, v = [rearrange(x, 's b ... -> b s ...').contiguous() ...]; AscendSpeed's
            # flash_self_attention_forward then rearranges 'b s h d -> s b (h d)' for its SBH call (a second
            # copy); the output comes back as a view. Each copy's gradient is a copy in the backward.
            q, k, v = (t.transpose(0, 1).contiguous() for t in (q, k, v))
            q, k, v = (t.permute(1, 0, 2, 3).reshape(seq, batch, -1) for t in (q, k, v))
        else:
            # MindSpeed's SBH rearrange: views where the tensor is contiguous, a copy where it is not.
            q, k, v = q.reshape(seq, batch, -1), k.reshape(seq, batch, -1), v.reshape(seq, batch, -1)
        window = s.sliding_window if s.sliding_window and seq > s.sliding_window else 0
        # Before the compressed mask, the full S x S causal mask with sparse_mode 0.
        sparse_mode = 4 if s.compressed_mask else 0
        return torch_npu.npu_fusion_attention(q, k, v, self.n, "SBH", atten_mask=mask, scale=d ** -0.5,
                                              pre_tockens=window or PRE_TOCKENS, next_tockens=NEXT_TOCKENS,
                                              sparse_mode=sparse_mode)[0]

    def _rotary(self, t, cos, sin):
        import torch_npu

        s = self.s
        if s.rotary_fraction <= 0:
            return t
        rotated = int(t.shape[-1] * s.rotary_fraction)
        part, rest = (t, None) if rotated == t.shape[-1] else (t[..., :rotated], t[..., rotated:])
        c, n = cos[..., :rotated], sin[..., :rotated]
        if s.fused_rotary:
            part = torch_npu.npu_rotary_mul(part, c, n)
        else:
            # Megatron's apply_rotary_pos_emb: t * cos + rotate_half(t) * sin, rotate_half = cat(-x2, x1).
            first, second = torch.chunk(part, 2, dim=-1)
            part = part * c + torch.cat((-second, first), dim=-1) * n
        return part if rest is None else torch.cat((part, rest), dim=-1)

    def _activation(self, x):
        import torch_npu

        s = self.s
        if s.activation == "swiglu":
            if s.fused_swiglu:
                return torch_npu.npu_swiglu(x, dim=-1)
            gate, up = torch.chunk(x, 2, dim=-1)
            return F.silu(gate) * up
        if s.activation == "geglu":
            gate, up = torch.chunk(x, 2, dim=-1)
            return F.gelu(gate, approximate="tanh") * up
        return F.gelu(x)

    def _moe(self, h):
        """Megatron-core MoE with the allgather token dispatcher and grouped GEMMs (MindSpeed GMM): the
        router's top-k over softmax probabilities, the tokens of this rank's experts gathered and
        permuted, two grouped GEMMs around the activation, the weighted scatter back. Routing is taken
        as balanced (the published runs use the auxiliary load-balancing loss)."""
        s = self.s
        seq, batch, width = h.shape
        tokens = h.reshape(seq * batch, width)
        probs = torch.softmax(self.router(tokens).float(), dim=-1)
        weights, chosen = torch.topk(probs, s.topk, dim=-1)
        # allgather dispatcher: every EP rank's tokens (the all-gather is priced apart), then the
        # top-k copies of the rows that go to this rank's experts. MindSpeed's allgather dispatcher
        # (mindspeed/core/transformer/moe/token_dispatcher.py, allgather_token_permutation) selects them with
        # masked_select and nonzero and copies the per-expert counts to the host (.cpu()): three host
        # synchronisations per MoE layer, each stalling the host until the device drains; here three
        # .cpu() reads of small device tensors stand for them (their data-dependent sizes are taken as
        # the balanced ones below).
        gathered = _ShapeOnly.apply(tokens, 0, s.ep) if s.ep > 1 else tokens
        counts = torch.histc(chosen.float(), bins=s.experts, min=0, max=s.experts - 1)
        for _ in range(3):
            counts.cpu()
        rows = seq * batch * s.topk  # this rank's share of the routed copies when balanced
        index = torch.zeros(rows, dtype=torch.int64)
        permuted = gathered.index_select(0, index)
        hidden = _GroupedLinear.apply(permuted, self.w1)
        hidden = self._activation(hidden)
        out = _GroupedLinear.apply(hidden, self.w2)
        out = out * weights.reshape(-1, 1)[:rows].to(out.dtype)
        combined = gathered.new_zeros(gathered.shape).index_add(0, index, out)
        combined = _ShapeOnly.apply(combined, 0, 1.0 / s.ep) if s.ep > 1 else combined
        return combined.view(seq, batch, width)


class _GroupedLinear(torch.autograd.Function):
    """MindSpeed's grouped GEMM (gmm) over the local experts with balanced groups: forward and input
    gradient as npu_grouped_matmul (group_type 0), weight gradient as its K-split form (group_type 2)."""

    @staticmethod
    def forward(ctx, x, weight):
        import torch_npu

        ctx.save_for_backward(x, weight)
        groups = torch.zeros(weight.shape[0], dtype=torch.int64, device=x.device)
        return torch_npu.npu_grouped_matmul([x], [weight], group_list=groups, split_item=3, group_type=0)[0]

    @staticmethod
    def backward(ctx, grad):
        import torch_npu

        x, weight = ctx.saved_tensors
        groups = torch.zeros(weight.shape[0], dtype=torch.int64, device=x.device)
        grad_x = torch_npu.npu_grouped_matmul([grad], [weight.transpose(1, 2)], group_list=groups, split_item=3,
                                              group_type=0)[0]
        grad_w = torch_npu.npu_grouped_matmul([x.t()], [grad], group_list=groups, split_item=3, group_type=2)[0]
        return grad_x, grad_w.view(weight.shape)


_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
             "npu::npu_grouped_matmul")
_ATTENTION_OPS = ("npu::npu_fusion_attention", "npu::npu_fusion_attention_grad")


def device_seconds_by_class() -> dict[str, float]:
    """Device seconds spent so far in GEMMs, in fused attention and in everything else (vector work)."""
    from npusim import _C

    totals = {"gemm": 0.0, "attention": 0.0, "vector": 0.0}
    for name, counts in _C._placement_report()["operators"].items():
        seconds = int(counts["device_ns"]) / 1e9
        key = "gemm" if name in _GEMM_OPS else "attention" if name in _ATTENTION_OPS else "vector"
        totals[key] += seconds
    return totals


def timed_seconds(work) -> float:
    """Simulated seconds of `work`, from an idle device to the end of its last kernel."""
    torch.npu.synchronize()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def timed_by_class(work) -> tuple[float, dict[str, float]]:
    """timed_seconds, with the device seconds of its GEMMs, fused attention and vector kernels."""
    torch.npu.synchronize()
    before = device_seconds_by_class()
    seconds = timed_seconds(work)
    after = device_seconds_by_class()
    return seconds, {key: after[key] - before[key] for key in after}


def _accumulate_main_grads(module: nn.Module, main_grads: dict) -> None:
    """Megatron without gradient-accumulation fusion: each weight's gradient of a micro-batch is added
    into its main_grad buffer by one in-place add."""
    for name, p in module.named_parameters():
        if p.grad is not None and name in main_grads:
            main_grads[name].add_(p.grad)


def _main_grads(module: nn.Module, s: Setup) -> dict:
    if s.gradient_accumulation_fusion:
        # MindSpeed's npu_matmul_add_fp32 accumulates the weight gradient inside its GEMM; the
        # non-GEMM parameters (norms, biases) still add.
        return {n: torch.empty(p.shape, dtype=s.main_grad_dtype) for n, p in module.named_parameters()
                if p.dim() == 1}
    return {n: torch.empty(p.shape, dtype=s.main_grad_dtype) for n, p in module.named_parameters()}


def _rope_and_mask(s: Setup):
    seq = s.seq
    cos = torch.empty(seq, 1, 1, s.head_size)
    sin = torch.empty(seq, 1, 1, s.head_size)
    size = COMPRESSED_MASK if s.compressed_mask else seq
    mask = torch.triu(torch.ones(size, size, dtype=torch.bool), 1)
    return cos, sin, mask


def stage_times(s: Setup) -> dict[str, float]:
    """Seconds of one micro-batch (forward + backward) of one layer of a TP rank, its forward alone
    (for recomputation), and the first and last stages' extras; compute only (no TP communication)."""
    tokens_local = s.seq // s.tp if s.sp else s.seq
    with npusim.estimate(), torch.device("npu"):
        torch.set_default_dtype(s.dtype)
        try:
            layer = MegatronLayer(s)
            main_grads = _main_grads(layer, s)
            cos, sin, mask = _rope_and_mask(s)
            x = torch.empty(tokens_local, s.micro_batch, s.width, requires_grad=True)
            grad = torch.empty(tokens_local, s.micro_batch, s.width)

            def layer_step():
                layer.zero_grad(set_to_none=True)
                x.grad = None
                layer(x, cos, sin, mask).backward(grad)
                _accumulate_main_grads(layer, main_grads)

            def layer_forward():
                with torch.no_grad():
                    layer(x, cos, sin, mask)

            layer_step()  # warm: first-call effects stay out of the figure
            layer_s, layer_classes = timed_by_class(layer_step)
            forward_s = timed_seconds(layer_forward) if s.recompute_layers else 0.0
            del layer, main_grads

            vocab_local = s.vocab // s.tp
            embedding = nn.Embedding(vocab_local, s.width)
            embedding_main = _main_grads(embedding, dataclasses.replace(s, gradient_accumulation_fusion=False))
            token_ids = torch.randint(0, vocab_local, (s.seq, s.micro_batch))
            embedding_grad = torch.empty(s.seq, s.micro_batch, s.width)

            def first_extra():
                embedding.zero_grad(set_to_none=True)
                out = embedding(token_ids)
                if s.embedding_scale:
                    out = out * s.width ** 0.5  # Gemma's sqrt(width), MiniCPM's scale_emb: one multiply
                out.backward(embedding_grad)
                _accumulate_main_grads(embedding, embedding_main)

            first_s, first_classes = timed_by_class(first_extra)
            del embedding, embedding_main

            norm = Norm(s)
            head = nn.Linear(s.width, vocab_local, bias=False)
            head_main = _main_grads(head, s)
            hidden = torch.empty(tokens_local, s.micro_batch, s.width, requires_grad=True)
            loss_mask = torch.empty(s.seq * s.micro_batch, dtype=torch.float32)

            def last_extra():
                norm.zero_grad(set_to_none=True)
                head.zero_grad(set_to_none=True)
                hidden.grad = None
                final = _gather(norm(hidden), s)
                if s.logit_scale:
                    final = final / (s.width / 256)
                logits = head(final)
                losses = VocabParallelCrossEntropy.apply(logits.float(), token_ids)
                (torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()).backward()
                _accumulate_main_grads(head, head_main)

            last_s, last_classes = timed_by_class(last_extra)
            del norm, head, head_main
        finally:
            torch.set_default_dtype(torch.float32)
    return {"layer": layer_s, "layer_forward": forward_s, "first_extra": first_s, "last_extra": last_s,
            "classes": {"layer": layer_classes, "first_extra": first_classes, "last_extra": last_classes}}


class VocabParallelCrossEntropy(torch.autograd.Function):
    """Megatron's vocab-parallel cross-entropy on the fp32 logits of this rank's vocabulary shard
    (megatron/core/tensor_parallel/cross_entropy.py): max, subtract, gather of the target logit, exp,
    sum, log, divide (its tensor-parallel all-reduces are of [s, b] and left out); backward: the saved
    softmax, minus one at the targets, times the loss gradient."""

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


def linear_gemm_seconds(s: Setup) -> dict[str, tuple[float, float, float]]:
    """Forward, input-gradient and weight-gradient GEMM seconds of each tensor-parallel linear of a layer
    (what a collective can hide behind)."""
    tokens = s.seq * s.micro_batch
    d = s.head_size
    n, g = s.heads // s.tp, max(1, s.groups // s.tp)
    f = s.ffn // s.tp
    shapes = {"qkv": (s.width, (n + 2 * g) * d), "dense": (n * d, s.width),
              "fc1": (s.width, (2 * f if s.gated else f) * max(1, s.topk)), "fc2": (f * max(1, s.topk), s.width)}
    result = {}
    with npusim.estimate(), torch.device("npu"):
        for name, (k, m) in shapes.items():
            x = torch.empty(tokens, k, dtype=s.dtype)
            w = torch.empty(m, k, dtype=s.dtype)
            dy = torch.empty(tokens, m, dtype=s.dtype)
            forward = timed_seconds(lambda: torch.matmul(x, w.t()))
            dgrad = timed_seconds(lambda: torch.matmul(dy, w))
            wgrad = timed_seconds(lambda: torch.matmul(dy.t(), x))
            result[name] = (forward, dgrad, wgrad)
    return result


def collective_seconds(op: str, nbytes: float, group: int) -> float:
    """One HCCL collective of a `group` of ranks inside one 8-NPU 910B server (npusim's model)."""
    from npusim.distributed import price_collective

    if group <= 1 and op != "send_recv":
        return 0.0
    return price_collective(op, int(nbytes), max(2, group), 8)[0]


def _exposed(comm: float, compute: float) -> float:
    """What a collective running alongside `compute` on the same chip adds (npusim's model: overlap hides
    only part of the shorter of the two, perf/CollectiveModel.h exposedCommunicationSeconds)."""
    from npusim.distributed import exposed_communication

    return exposed_communication(comm, compute)


def tensor_parallel_exposed_seconds(s: Setup, gemms: dict) -> float:
    """Tensor-parallel communication of one layer and micro-batch that compute does not hide.

    Megatron with sequence parallelism (megatron/core/tensor_parallel/layers.py,
    LinearWithGradAccumulationAndAsyncCommunication): forward all-gather before each column-parallel
    linear and reduce-scatter after each row-parallel one, on the critical path; backward of a
    column-parallel linear re-gathers its input while the input-gradient GEMM runs and reduce-scatters
    the input gradient while the weight-gradient GEMM runs; backward of a row-parallel linear gathers
    the output gradient first. Without sequence parallelism: an all-reduce after each row-parallel
    forward, and the input-gradient all-reduce of each column-parallel backward behind its
    weight-gradient GEMM. MindSpeed's MC2 (mindspeed/core/tensor_parallel/ascend_turbo) fuses each
    forward collective into its GEMM (npu_all_gather_base_mm / npu_mm_reduce_scatter_base) and the
    row-parallel backward all-gather into the input-gradient GEMM. Where a collective runs beside a GEMM,
    what shows is npusim's overlap model (:func:`_exposed`). MoE layers add their expert-parallel
    communication (:func:`expert_parallel_seconds`).
    """
    exposed = expert_parallel_seconds(s)
    if s.tp <= 1:
        return exposed
    full = s.seq * s.micro_batch * s.width * s.element
    if not s.sp:
        allreduce = collective_seconds("allreduce", full, s.tp)
        exposed += 2 * allreduce  # forward, after dense and fc2
        for name in ("qkv", "fc1"):
            exposed += _exposed(allreduce, gemms[name][2])
        return exposed
    gather = collective_seconds("allgather", full, s.tp)
    scatter = collective_seconds("reduce_scatter", full, s.tp)
    for column, row in (("qkv", "dense"), ("fc1", "fc2")):
        if s.mc2_active:
            exposed += _exposed(gather, gemms[column][0]) + _exposed(scatter, gemms[row][0])
            exposed += _exposed(scatter, gemms[column][2]) + _exposed(gather, gemms[row][1])
        else:
            exposed += gather + scatter
            exposed += _exposed(gather, gemms[column][1]) + _exposed(scatter, gemms[column][2]) + gather
    return exposed


def expert_parallel_seconds(s: Setup) -> float:
    """The allgather token dispatcher's expert-parallel communication of one MoE layer and micro-batch
    (Megatron-core MoEAllGatherTokenDispatcher as MindSpeed runs it): the hidden states all-gathered over the EP
    group before the experts and the expert outputs reduce-scattered after them, and the reverse in the
    backward, each on the critical path (the routing probabilities and indices gathered beside them are small)."""
    if not s.experts or s.ep <= 1:
        return 0.0
    tokens = s.seq * s.micro_batch // (s.tp if s.sp else 1)
    full = s.ep * tokens * s.width * s.element
    return 2 * (collective_seconds("allgather", full, s.ep) + collective_seconds("reduce_scatter", full, s.ep))


def optimizer_seconds(shard_parameters: int, dtype: torch.dtype) -> float:
    """Megatron's mixed-precision optimizer step on one rank's fp32 shard (the whole stage where DP is 1):
    with --fp16, the dynamic loss scaler's unscale and inf/nan check of the fp32 gradients
    (_unscale_main_grads_and_check_for_nan); --clip-grad 1.0's gradient norm (clip_grad_norm_fp32; the
    scaling it may apply depends on the values and is left out); fused AdamW over master weights,
    gradients and two moments; the copy of the updated master weights back to the half-precision weights."""
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

        return timed_seconds(step)


def estimate(s: Setup) -> dict[str, float]:
    """Tokens per second per NPU for a setup, with the parts of the step."""
    times = stage_times(s)
    gemms = linear_gemm_seconds(s) if s.tp > 1 else {}  # what TP collectives can hide behind
    tp_comm = tensor_parallel_exposed_seconds(s, gemms)
    layer = times["layer"] + tp_comm
    per_stage = s.layers / s.pp
    recompute = min(s.recompute_layers, per_stage) * times["layer_forward"]
    tokens_local = s.seq // s.tp if s.sp else s.seq
    full = s.seq * s.micro_batch * s.width * s.element
    # The embedding's output and the head's input cross the tensor-parallel group (reduce-scatter /
    # all-reduce, all-gather), once forward and once backward.
    first_comm = 2 * collective_seconds("reduce_scatter" if s.sp else "allreduce", full, s.tp)
    last_comm = 2 * collective_seconds("allgather", full, s.tp) if s.sp else 0.0
    activation = tokens_local * s.micro_batch * s.width * s.element
    chunks = max(1, s.layers // (s.pp * s.vpp_layers)) if s.vpp_layers else 1
    p2p = 2 * chunks * collective_seconds("send_recv", activation, 2) if s.pp > 1 else 0.0
    body = per_stage * layer + recompute
    first = body + times["first_extra"] + first_comm + p2p
    last = body + times["last_extra"] + last_comm + p2p
    if s.pp == 1:
        first = last = body + times["first_extra"] + first_comm + times["last_extra"] + last_comm
    slowest = max(first, last)
    m = s.micro_batches
    pipeline = (m + (s.pp - 1) / chunks) * slowest
    # Parameters of the larger stage on this rank (first or last: a layer share plus one embedding).
    stage_parameters = int(per_stage * s.layer_parameters() / s.tp + s.vocab * s.width / s.tp)
    shard = math.ceil(stage_parameters / s.dp) if s.distributed_optimizer else stage_parameters
    optimizer = optimizer_seconds(shard, s.dtype)
    grad_bytes = stage_parameters * torch.finfo(s.main_grad_dtype).bits // 8
    last_backward = slowest * 2 / 3  # the last micro-batch's backward on this stage
    first_forward = slowest / 3
    if s.distributed_optimizer:
        grad_reduce = collective_seconds("reduce_scatter", grad_bytes, s.dp)
        param_gather = collective_seconds("allgather", stage_parameters * s.element, s.dp)
    else:
        grad_reduce = collective_seconds("allreduce", grad_bytes, s.dp)
        param_gather = 0.0
    exposed_reduce = _exposed(grad_reduce, last_backward) if s.overlap_grad_reduce else grad_reduce
    exposed_gather = _exposed(param_gather, first_forward) if s.overlap_param_gather else param_gather
    dp_comm = exposed_reduce + exposed_gather
    step = pipeline + optimizer + dp_comm
    tokens = s.global_batch * s.seq
    # Where the step goes, by class of work (the slowest stage, times the pipeline's multiplier).
    multiplier = m + (s.pp - 1) / chunks
    extras = ["first_extra", "last_extra"] if s.pp == 1 else ["first_extra" if first >= last else "last_extra"]
    breakdown = {key: 0.0 for key in ("gemm", "attention", "vector", "idle")}
    recompute_share = recompute / times["layer"] if times["layer"] else 0.0
    for part, count in [("layer", per_stage + recompute_share)] + [(e, 1.0) for e in extras]:
        classes = times["classes"][part]
        for key in ("gemm", "attention", "vector"):
            breakdown[key] += multiplier * count * classes[key]
        breakdown["idle"] += multiplier * count * max(0.0, times[part] - sum(classes.values()))
    breakdown["tp_comm"] = multiplier * (per_stage * tp_comm + (first_comm + last_comm if s.pp == 1 else
                                                               first_comm if first >= last else last_comm))
    breakdown["p2p"] = multiplier * p2p
    breakdown["optimizer"] = optimizer
    breakdown["dp_comm"] = dp_comm
    return {
        "breakdown": breakdown,
        "layer_s": times["layer"], "tp_comm_s": tp_comm, "first_stage_s": first, "last_stage_s": last,
        "pipeline_s": pipeline, "optimizer_s": optimizer, "p2p_s": p2p, "dp_comm_s": dp_comm, "step_s": step,
        "tokens_per_s_per_npu": tokens / step / s.npus,
    }


def select_chip(requested: str | None) -> str:
    """Simulate `requested`, else NPUSIM_SOC's chip, else PUBLISHED_NPU; called before the device is first used
    (the chip is fixed at the first use)."""
    import os

    from npusim import _C

    wanted = requested or os.environ.get("NPUSIM_SOC") or PUBLISHED_NPU
    os.environ["NPUSIM_SOC"] = wanted
    chip = str(_C._chip_info()["soc_name"])
    if chip != wanted:
        raise SystemExit(f"the simulated NPU was already fixed as {chip} before this script could choose {wanted}; "
                         f"start it with NPUSIM_SOC={wanted}")
    return chip


def chip_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chip", default=None,
                        help=f"the NPU to simulate (default: NPUSIM_SOC if set, else {PUBLISHED_NPU}, the Atlas 900 "
                             "A2 PoDc NPU the published figures were measured on)")


def describe(s: Setup, r: dict) -> str:
    return (f"layer {r['layer_s'] * 1e3:.1f} ms + TP/EP exposed {r['tp_comm_s'] * 1e3:.1f} ms, stages "
            f"{r['first_stage_s'] * 1e3:.0f}/{r['last_stage_s'] * 1e3:.0f} ms x ({s.micro_batches} + {s.pp} - 1), "
            f"pipeline {r['pipeline_s']:.2f} s, optimizer {r['optimizer_s'] * 1e3:.0f} ms, "
            f"PP send/recv {r['p2p_s'] * 1e3:.2f} ms/micro-batch, DP exposed {r['dp_comm_s'] * 1e3:.0f} ms")


def main():
    from megatron_setups import SETUPS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SETUPS), default="llama2-7b",
                        help="a published setup of examples/megatron_setups.py (default: MindSpeed-LLM's LLaMA-2-7B)")
    parser.add_argument("--layers", type=int, default=None,
                        help="override the layer count (a shallower model of the same width and parallelism)")
    chip_argument(parser)
    args = parser.parse_args()
    chip = select_chip(args.chip)
    s = SETUPS[args.model]
    if args.layers is not None:
        if args.layers < s.pp or args.layers % s.pp:
            parser.error(f"--layers must be a positive multiple of the pipeline size {s.pp}")
        s = dataclasses.replace(s, layers=args.layers, recompute_layers=min(s.recompute_layers, args.layers))
    started = time.perf_counter()
    r = estimate(s)
    print(f"{s.name} pretraining as published ({s.source}): {s.layers} layers, TP{s.tp} PP{s.pp} DP{s.dp}, "
          f"sequence {s.seq}, micro-batch {s.micro_batch}, global batch {s.global_batch}, {s.micro_batches} "
          f"micro-batches per step; on an {chip}")
    print(f"  {describe(s, r)}")
    print(f"  step {r['step_s']:.2f} s -> {r['tokens_per_s_per_npu']:.0f} tokens/s per NPU "
          f"(published: {s.reference_tokens_per_s:.0f})")
    print(f"  (estimated in {time.perf_counter() - started:.1f} s of host time)")


if __name__ == "__main__":
    main()

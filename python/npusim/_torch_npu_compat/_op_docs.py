"""The docstrings of torch_npu's own operators as ``torch_npu.<name>`` exposes them.

torch_npu documents each of its operators (``help(torch_npu.npu_rms_norm)``, and its API test
checks that every public one has a ``__doc__``). The texts below are npusim's: the call, what it
computes and returns, in the terms of torch_npu's operator reference
(shared/reference/torch_npu-custom-ops.md); details npusim does not implement are named where
the operator is served only in part (docs/torch_npu-compatibility.md has the full table).
"""

from __future__ import annotations

__all__ = ["OPERATOR_DOCS"]

OPERATOR_DOCS: dict[str, str] = {
    "fast_gelu": """fast_gelu(self) -> Tensor

The fast GELU approximation ``x * sigmoid(1.702 * x)``, element-wise, in one fused kernel
(the older name of :func:`npu_fast_gelu`; ``torch_npu.jit.optimize`` rewrites the exact GELU of a
TorchScript graph into it). ``self``: float16, bfloat16 or float32. Differentiable.
""",
    "npu_fast_gelu": """npu_fast_gelu(self) -> Tensor

The fast GELU approximation ``x * sigmoid(1.702 * x)``, element-wise, in one fused kernel.
``self``: float16, bfloat16 or float32; computed in float32 and returned in ``self``'s dtype.
Differentiable (gradient: :func:`npu_fast_gelu_backward`).
""",
    "npu_fast_gelu_backward": """npu_fast_gelu_backward(grad, self) -> Tensor

The gradient of :func:`npu_fast_gelu` with respect to ``self``, given the output gradient
``grad``.
""",
    "npu_gelu": """npu_gelu(self, *, approximate='none') -> Tensor

GELU in one fused kernel: exact (``approximate='none'``, with erf) or the tanh approximation
(``'tanh'``). Computed in float32, returned in ``self``'s dtype. Differentiable.
""",
    "npu_gelu_backward": """npu_gelu_backward(grad_output, self, *, approximate='none') -> Tensor

The gradient of :func:`npu_gelu` with respect to ``self``.
""",
    "npu_silu": """npu_silu(self) -> Tensor

SiLU (Swish with scale 1), ``x * sigmoid(x)``, element-wise (deprecated in torch_npu in favour of
``torch.nn.functional.silu``). ``self``: float16, bfloat16 or float32. Differentiable (gradient:
:func:`npu_silu_backward`).
""",
    "npu_silu_": """npu_silu_(self) -> Tensor

In-place :func:`npu_silu`: overwrites ``self`` with ``self * sigmoid(self)`` and returns it.
""",
    "npu_silu_backward": """npu_silu_backward(grad_output, x0, x1) -> Tensor

The gradient of :func:`npu_silu`: ``x0`` is its input and ``x1`` its output.
""",
    "npu_swiglu": """npu_swiglu(self, dim=-1) -> Tensor

SwiGLU: splits ``self`` in two halves ``A, B`` along ``dim`` (its size must be even) and returns
``silu(A) * B``, half the size along ``dim``. float16, bfloat16 or float32, computed in float32.
Differentiable.
""",
    "npu_swiglu_backward": """npu_swiglu_backward(grad_output, self, dim=-1) -> Tensor

The gradient of :func:`npu_swiglu` with respect to ``self`` (both halves, concatenated along
``dim``).
""",
    "npu_geglu": """npu_geglu(self, dim=-1, approximate=1, activate_left=False) -> (Tensor, Tensor)

GeGLU: splits ``self`` in two halves along ``dim`` and multiplies one half by the GELU of the
other (``activate_left`` chooses the left half for the GELU; ``approximate`` 0 is the exact GELU,
1 the tanh approximation). Returns ``(y, gelu)``, the result and the GELU half. Differentiable.
""",
    "npu_geglu_grad": """npu_geglu_grad(grad_output, self, gelu, dim=-1, approximate=1, activate_left=False) -> Tensor

The gradient of :func:`npu_geglu` with respect to ``self``, given the ``gelu`` half of its
forward result.
""",
    "npu_rms_norm": """npu_rms_norm(self, gamma, epsilon=1e-06) -> (Tensor, Tensor)

RMSNorm over the trailing dimensions that ``gamma`` covers:
``y = self / sqrt(mean(self^2) + epsilon) * gamma``. Returns ``(y, rstd)`` with ``rstd`` the
float32 reciprocal standard deviation per row (kept for the backward pass). Statistics in float32;
``self`` may be bfloat16/float16 with a float32 ``gamma``. Differentiable.
""",
    "npu_rms_norm_backward": """npu_rms_norm_backward(dy, self, gamma, rstd) -> (Tensor, Tensor)

The gradients of :func:`npu_rms_norm` with respect to ``self`` and ``gamma``, given its ``rstd``.
""",
    "npu_add_rms_norm": """npu_add_rms_norm(x1, x2, gamma, epsilon=1e-06) -> (Tensor, Tensor, Tensor)

Residual add and RMSNorm in one kernel: ``x = x1 + x2``, then :func:`npu_rms_norm` of ``x``.
Returns ``(y, rstd, x)``. No backward (as in torch_npu).
""",
    "npu_rotary_mul": """npu_rotary_mul(self, r1, r2, rotary_mode='half', rotate=None) -> Tensor

Rotary position embedding: ``self * r1 + rotate_half(self) * r2`` with ``r1``/``r2`` the cosine
and sine tables (broadcast against ``self``). ``rotary_mode`` ``'half'`` rotates the two halves of
the last dimension, ``'interleave'`` its even/odd pairs; ``rotate`` gives the rotation as a
matrix instead. Differentiable (not with ``rotate``).
""",
    "npu_rotary_mul_backward": """npu_rotary_mul_backward(grad, self, r1, r2, rotary_mode='half') -> (Tensor, Tensor, Tensor)

The gradients of :func:`npu_rotary_mul` with respect to ``self``, ``r1`` and ``r2``.
""",
    "npu_mrope": """npu_mrope(positions, query, key, cos_sin_cache, head_size, *, mrope_section=None, rotary_mode='half', cache_mode='default') -> (Tensor, Tensor)

Rotary embedding of ``query`` and ``key`` (tokens x heads*head_size) with cosines and sines looked
up in ``cos_sin_cache`` by ``positions``; with ``mrope_section`` (Qwen2-VL's multimodal RoPE) the
rotary dimensions are split into sections that take their positions from the rows of a
``[3, tokens]`` ``positions``. Returns the rotated ``(query, key)``.
""",
    "npu_scaled_masked_softmax": """npu_scaled_masked_softmax(x, mask, scale=1, fixed_triu_mask=False) -> Tensor

``softmax(x * scale)`` over the last dimension with the positions where ``mask`` is True removed
(or a causal upper-triangle mask when ``fixed_triu_mask``), in one fused kernel. Differentiable.
""",
    "npu_scaled_masked_softmax_backward": """npu_scaled_masked_softmax_backward(y_grad, y, mask, scale, fixed_triu_mask) -> Tensor

The gradient of :func:`npu_scaled_masked_softmax` given its output ``y``.
""",
    "npu_cross_entropy_loss": """npu_cross_entropy_loss(input, target, weight=None, reduction='mean', ignore_index=-100, label_smoothing=0.0, lse_square_scale_for_zloss=0.0, return_zloss=False) -> (Tensor, Tensor, Tensor, Tensor)

Cross entropy of the logits ``input`` [N, C] against class indices ``target`` [N] in one fused
kernel (class ``weight``, ``ignore_index`` and label smoothing as
``torch.nn.functional.cross_entropy``). Returns ``(loss, log_prob, zloss, lse_for_zloss)``;
the z-loss outputs are not computed by npusim. Differentiable.
""",
    "npu_cross_entropy_loss_backward": """npu_cross_entropy_loss_backward(grad_loss, log_prob, target, weight=None, grad_zloss=None, lse_for_zloss=None, reduction='mean', ignore_index=-100, label_smoothing=0.0, lse_square_scale_for_zloss=0.0) -> Tensor

The gradient of :func:`npu_cross_entropy_loss` with respect to its logits, given ``log_prob``.
""",
    "npu_confusion_transpose": """npu_confusion_transpose(self, perm, shape, transpose_first) -> Tensor

A reshape to ``shape`` and a permutation by ``perm`` in one kernel: permute first and then
reshape when ``transpose_first``, else reshape and then permute. Differentiable.
""",
    "npu_confusion_transpose_backward": """npu_confusion_transpose_backward(grad, perm, shape, transpose_first) -> Tensor

The gradient of :func:`npu_confusion_transpose` (its inverse reshape and permutation).
""",
    "npu_sign_bits_pack": """npu_sign_bits_pack(self, size) -> Tensor

Packs the signs of the float16/float32 vector ``self`` into bits (1 for >= 0), eight per uint8,
padded to a multiple of 8, and returns them as a uint8 tensor of shape ``[size, -1]``.
""",
    "npu_sign_bits_unpack": """npu_sign_bits_unpack(input, size, dtype) -> Tensor

Unpacks the uint8 bits of ``input`` into +1.0 / -1.0 values of ``dtype`` (float16 or float32),
returned with shape ``[size, -1]``; the inverse of :func:`npu_sign_bits_pack`.
""",
    "npu_fusion_attention": """npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout='', sink=None, dropout_mask=None, seed=0, offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)

FlashAttention for training in one fused kernel: ``softmax(scale * Q K^T (+ pse), masked) V``
with dropout ``1 - keep_prob``. ``input_layout`` is BSH, SBH, BSND, BNSD or TND (variable-length
batches with ``actual_seq_qlen``/``actual_seq_kvlen``, cumulative); grouped-query attention
when key/value have fewer heads; ``atten_mask`` True masks a position; ``sparse_mode`` 0-8 selects
torch_npu's mask patterns (causal, band, prefix...). Returns ``(attention_out, softmax_max,
softmax_sum, softmax_out, seed, offset, numels)`` with float32 statistics ``[B, N, S, 8]``.
Differentiable (gradient: :func:`npu_fusion_attention_grad`).
""",
    "npu_fusion_attention_grad": """npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, seed=0, offset=0, numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout='', sink=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)

The gradients of :func:`npu_fusion_attention` with respect to query, key, value and pse, from the
output gradient ``dy`` and the forward statistics; the dropout mask is regenerated from ``seed``
and ``offset``. Returns ``(dq, dk, dv, dpse, dsink)``.
""",
    "npu_prompt_flash_attention": """npu_prompt_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None, quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0, pre_tokens=2147483647, next_tokens=0, input_layout='BSH', num_key_value_heads=0, actual_seq_lengths_kv=None, sparse_mode=0) -> Tensor

Attention of the prefill (full-prompt) phase of inference in one fused kernel:
``softmax(scale_value * Q K^T (+ pse_shift), masked) V`` per head, layouts BSH, BSND, BNSD and
BNSD_BSND, grouped-query attention with ``num_key_value_heads``, per-batch valid lengths and
torch_npu's sparse modes 0-4. Softmax in float32. No backward (as in torch_npu).
""",
    "npu_incre_flash_attention": """npu_incre_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None, block_table=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None, quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0, input_layout='BSH', num_key_value_heads=0, block_size=0, inner_precise=1) -> Tensor

Attention of the decode (incremental) phase of inference in one fused kernel: one new query
token per sequence against the key/value cache, with per-batch valid cache lengths
``actual_seq_lengths`` and grouped-query attention. Layouts BSH, BSND, BNSD. No backward.
""",
    "npu_fused_infer_attention_score": """npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None, ..., num_heads=1, scale=1.0, pre_tokens=2147483647, next_tokens=2147483647, input_layout='BSH', num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0, antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0, softmax_lse_flag=False) -> (Tensor, Tensor)

Inference attention for both phases in one fused kernel (prefill as
:func:`npu_prompt_flash_attention`, decode as :func:`npu_incre_flash_attention`, chosen by the
query length). Returns ``(attention_out, softmax_lse)``; the log-sum-exp is filled when
``softmax_lse_flag``. npusim serves the unquantised, unpaged forms.
""",
    "npu_fused_infer_attention_score_v2": """npu_fused_infer_attention_score_v2(query, key, value, *, query_rope=None, key_rope=None, pse_shift=None, atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, block_table=None, ..., learnable_sink=None, num_query_heads=1, num_key_value_heads=0, softmax_scale=1.0, pre_tokens=2147483647, next_tokens=2147483647, input_layout='BSH', sparse_mode=0, block_size=0, ..., inner_precise=0, return_softmax_lse=False, query_dtype=None, ..., out_dtype=None) -> (Tensor, Tensor)

:func:`npu_fused_infer_attention_score` with torch_npu's renamed arguments (``num_query_heads``,
``softmax_scale``, ``actual_seq_qlen``, ``actual_seq_kvlen``, ``return_softmax_lse``) and the same
math. Its ``.out`` form writes ``out=[attention_out, softmax_lse]`` with a ``workspace``. npusim
serves the unquantised, unpaged forms without explicit dtypes.
""",
    "_npu_fused_infer_attention_score_get_max_workspace": """_npu_fused_infer_attention_score_get_max_workspace(query, key, value, *, ...) -> Tensor

The workspace (uint8, on the query's device) that ``npu_fused_infer_attention_score.out`` needs
for these arguments with any valid lengths: allocate it once before an NPUGraph capture whose
task updates change ``actual_seq_lengths``.
""",
    "_npu_fused_infer_attention_score_infer_output": """_npu_fused_infer_attention_score_infer_output(query, value, *, quant_scale2=None, block_table=None, query_rope=None, num_heads=1, num_key_value_heads=0, input_layout='BSH', softmax_lse_flag=False) -> (Tensor, Tensor)

Empty ``(attention_out, softmax_lse)`` tensors shaped as ``npu_fused_infer_attention_score``
returns them, for its ``.out`` form.
""",
    "_npu_fused_infer_attention_score_v2_get_max_workspace": """_npu_fused_infer_attention_score_v2_get_max_workspace(query, key, value, *, ...) -> Tensor

The workspace of ``npu_fused_infer_attention_score_v2.out`` for these arguments with any valid
lengths.
""",
    "_npu_fused_infer_attention_score_v2_infer_output": """_npu_fused_infer_attention_score_v2_infer_output(query, value, *, quant_scale_out=None, block_table=None, query_rope=None, num_query_heads=1, num_key_value_heads=0, input_layout='BSH', return_softmax_lse=False, query_dtype=None, value_dtype=None, out_dtype=None) -> (Tensor, Tensor)

Empty ``(attention_out, softmax_lse)`` tensors shaped as ``npu_fused_infer_attention_score_v2``
returns them, for its ``.out`` form.
""",
    "_npu_paged_attention": """_npu_paged_attention(query, key_cache, value_cache, num_kv_heads, num_heads, scale_value, block_table, context_lens, out) -> ()

ATB's paged attention (the decode step of vllm-ascend): each token's query
``[num_tokens, num_heads, head_size]`` attends to the first ``context_lens[i]`` positions of its
sequence, which ``block_table[i]`` (int32) scatters over the caches
``[num_blocks, block_size, num_kv_heads, head_size(_v)]``; softmax(scale_value·q·Kᵀ)·V with
grouped-query attention, written to ``out``. ``context_lens`` are host values of the launch.
""",
    "npu_grouped_matmul": """npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0, tuning_config=None, output_dtype=None, x_dtype=None, weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None) -> List[Tensor]

Several matrix products in one kernel (the experts of a mixture-of-experts layer):
``y_i = x_i @ weight_i (+ bias_i)``, with the groups given as lists of tensors or as row ranges of
one tensor through ``group_list`` (cumulative ends, or counts when ``group_list_type`` is 1);
``split_item`` says whether inputs and outputs are split or concatenated, ``act_type`` adds an
activation. npusim serves the unquantised forms.
""",
    "npu_moe_gating_top_k_softmax": """npu_moe_gating_top_k_softmax(x, finished=None, k=1) -> (Tensor, Tensor, Tensor)

Router of a mixture-of-experts layer: softmax of the gating logits ``x`` [tokens, experts], then
the ``k`` largest per token. Returns ``(y, expert_idx, row_idx)``: the top-k probabilities, their
experts (int32) and the row index of each (token, slot) pair; rows with ``finished`` True get
the expert count as their index.
""",
    "npu_moe_init_routing_v2": """npu_moe_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1, expert_num=-1, drop_pad_mode=0, expert_tokens_num_type=0, expert_tokens_num_flag=False, quant_mode=-1, active_expert_range=[], row_idx_type=0, x_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)

Sorts the tokens of a mixture-of-experts layer by the expert each (token, slot) pair chose:
returns ``(expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum, expanded_scale)``.
npusim serves the dropless, unquantised routing.
""",
    "npu_moe_finalize_routing": """npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row, export_for_source_row, drop_pad_mode=0, k=1) -> Tensor

Combines the expert outputs of a mixture-of-experts layer back into token order: for each token,
the sum over its ``k`` slots of ``scales * (row + bias[expert])``, plus the residuals ``skip1`` and
``skip2``.
""",
    "npu_moe_token_permute": """npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False) -> (Tensor, Tensor)

Permutes the tokens of a mixture-of-experts layer so that the tokens routed to each expert are
contiguous (stable order by expert). Returns ``(permuted_tokens, sorted_indices)`` with the int32
inverse map used by :func:`npu_moe_token_unpermute`. Differentiable.
""",
    "npu_moe_token_unpermute": """npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None) -> Tensor

Undoes :func:`npu_moe_token_permute`: brings expert outputs back to token order, summing the top-k
slots of each token weighted by ``probs``. Differentiable.
""",
    "npu_apply_adam": """npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, *, out=(var, m, v)) -> (Tensor, Tensor, Tensor)

One Adam step (TensorFlow's ApplyAdam) updating ``var``, ``m`` and ``v`` in place:
``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``, moments updated with ``grad``, and
``var -= lr_t * m / (sqrt(v) + epsilon)`` (Nesterov momentum with ``use_nesterov``). Call it with
``out=(var, m, v)``; the form without ``out`` raises, as in torch_npu.
""",
    "npu_apply_adam_w": """npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize, *, out=(var, m, v)) -> (Tensor, Tensor, Tensor)

One AdamW step updating ``var``, ``m`` and ``v`` in place (decoupled weight decay; bias
correction with ``beta1_power``/``beta2_power`` = beta^(step-1); AMSGrad keeps the running
maximum in ``max_grad_norm``; ``maximize`` ascends). Call it with ``out=(var, m, v)``; the form
without ``out`` raises, as in torch_npu.
""",
    "npu_bert_apply_adam": """npu_bert_apply_adam(lr, beta1, beta2, epsilon, grad, max_grad_norm, global_grad_norm, weight_decay, step_size=None, adam_mode=0, *, out=(var, m, v)) -> (Tensor, Tensor, Tensor)

One step of BERT's Adam (the ApplyAdamV2 kernel) updating ``var``, ``m`` and ``v`` in place
(float16 or float32, all of one dtype). ``adam_mode`` 0 ("adam"): the gradient is divided by
``global_grad_norm`` when ``max_grad_norm > 0`` and ``global_grad_norm > 1``, the moments are
updated, ``update = m / (sqrt(v) + epsilon)`` (``+ weight_decay * var`` when ``weight_decay > 0``)
and ``var -= lr * update``. ``adam_mode`` 1 ("mbart_adam"): ``var -= update * step_size`` (plus
the kernel's decay term ``lr * var`` when ``weight_decay > 0``). The kernel compares the scalars
after rounding them up to integers. Call it with ``out=(var, m, v)``; the form without ``out``
raises, as in torch_npu (deprecated there).
""",
    "npu_max": """npu_max(self, dim, keepdim=False) -> (Tensor, Tensor)

The maximum of ``self`` along ``dim`` and its position, as ``torch.max(self, dim, keepdim)``
but with int32 indices (the chip's ArgMaxWithValue). Returns ``(values, indices)``.
Differentiable with respect to ``self`` (gradient: :func:`npu_max_backward`).
""",
    "npu_max_backward": """npu_max_backward(grad, dim, indices, sizes, keepdim) -> Tensor

The gradient of :func:`npu_max`: a zero tensor of shape ``sizes`` with ``grad`` scattered to the
positions ``indices`` along ``dim``.
""",
    "npu_slice": """npu_slice(self, offsets, size, *, out=None) -> Tensor

The block of ``self`` that starts at ``offsets`` and has shape ``size`` (one entry per dimension),
copied into a new contiguous tensor (TensorFlow's Slice; deprecated in torch_npu in favour of
indexing). ``out`` receives the block when given. No backward.
""",
    "npu_scatter_nd_update_": """npu_scatter_nd_update_(self, indices, updates) -> Tensor

TensorFlow's ScatterNdUpdate in place: each row of ``indices`` (int32/int64, last dimension of
length ``d``) names a slice ``self[i0, ..., i(d-1)]`` that is overwritten by the corresponding
slice of ``updates`` (used for key/value-cache writes). Returns ``self``.
""",
    "npu_dynamic_quant": """npu_dynamic_quant(input, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode='pertoken', dst_type_max=0.0) -> (Tensor, Tensor)

Dynamic per-token int8 quantization: each row of ``input`` (optionally multiplied by
``smooth_scales``) is scaled so its largest magnitude maps to 127 and rounded. Returns
``(y, scale)`` with ``y`` int8 and ``scale`` the float32 per-row scale (``input ≈ y * scale``).
""",
    "npu_quant_matmul": """npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None, x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None, y_scale=None) -> Tensor

Quantized matrix product: int8 ``x1 @ x2`` accumulated in int32 (plus an int32 ``bias``),
dequantized by ``scale`` (per tensor or per output channel) and ``pertoken_scale`` (per row of
``x1``), optionally shifted by ``offset``; the result is int8, float16, bfloat16 or int32 by
``output_dtype``.
""",
    "print_npugraph_tensor": """print_npugraph_tensor(input, *, tensor_name=None) -> ()

Prints ``input`` (``tensor_name=<tensor>, shape=..., dtype=...``) from the host when the stream
reaches it: at once in eager mode, at every replay inside a captured NPUGraph (its contents at
that point of the replay).
""",
    "save_npugraph_tensor": """save_npugraph_tensor(input, *, save_path=None, overwrite=False) -> ()

Saves ``input`` (or, with the ``tensor_list`` overload, a list of tensors) with ``torch.save`` when
the stream reaches it: at once in eager mode, at every replay inside a captured NPUGraph. The file
is ``<stem>_device_<i>_<n>.pt`` (``n`` counts per name, fixed when the call is issued or
captured), ``<stem>_device_<i>.pt`` with ``overwrite=True``; no ``save_path`` means
``tensor_<timestamp>.pt``.
""",
}

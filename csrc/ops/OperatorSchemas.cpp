// The torch.ops.npu schemas, verbatim from op-plugin's op_plugin_functions.yaml
// at the torch_npu 2.13 line (reference torch_npu-custom-ops.md §4, §5): names,
// defaults, keyword-only markers and return arity are what user code relies
// on (transformers passes npu_fusion_attention's layout positionally, DeepSpeed
// calls npu_apply_adam_w with out=). Only operators npusim implements are
// defined: an undefined torch_npu operator stays an AttributeError.
#include <torch/library.h>

TORCH_LIBRARY(npu, m) {
  // ---- attention (training)
  m.def(
      "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, "
      "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
      "int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, int[]? prefix=None, "
      "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
      "bool sync=False, str softmax_layout=\"\", Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, "
      "int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)",
      {at::Tag::nondeterministic_seeded});
  m.def(
      "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
      "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
      "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
      "float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, "
      "int inner_precise=0, int seed=0, int offset=0, int numels=0, int[]? prefix=None, "
      "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
      "bool sync=False, str softmax_layout=\"\", Tensor? sink=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");

  // ---- normalisation, rotary embedding, activations
  m.def("npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)");
  m.def("npu_rms_norm_backward(Tensor dy, Tensor self, Tensor gamma, Tensor rstd) -> (Tensor, Tensor)");
  m.def("npu_add_rms_norm(Tensor x1, Tensor x2, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor, Tensor)");
  m.def("npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half', Tensor? rotate=None) -> Tensor");
  m.def(
      "npu_rotary_mul_backward(Tensor grad, Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') "
      "-> (Tensor, Tensor, Tensor)");
  m.def(
      "npu_mrope(Tensor positions, Tensor query, Tensor key, Tensor cos_sin_cache, int head_size, *, "
      "int[]? mrope_section=None, str? rotary_mode='half', str? cache_mode='default') -> (Tensor, Tensor)");
  m.def("npu_swiglu(Tensor self, int dim=-1) -> Tensor");
  m.def("npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor");
  m.def("npu_geglu(Tensor self, int dim=-1, int approximate=1, bool activate_left=False) -> (Tensor, Tensor)");
  m.def(
      "npu_geglu_grad(Tensor grad_output, Tensor self, Tensor gelu, int dim=-1, int approximate=1, "
      "bool activate_left=False) -> Tensor");
  m.def("npu_gelu(Tensor self, *, str approximate='none') -> Tensor");
  // [U] backward schemas not in the reference: named as torch_npu's derivatives call them.
  m.def("npu_gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor");
  m.def("npu_fast_gelu(Tensor self) -> Tensor");
  m.def("npu_fast_gelu_backward(Tensor grad, Tensor self) -> Tensor");
  // fast_gelu is npu_fast_gelu under its older name (both exposed; torch_npu.jit's fusion pass
  // rewrites aten::gelu into npu::fast_gelu).
  m.def("fast_gelu(Tensor self) -> Tensor");
  m.def("npu_silu(Tensor self) -> Tensor");
  m.def("npu_silu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("npu_silu_backward(Tensor grad_output, Tensor x0, Tensor x1) -> Tensor");

  // ---- reductions and slicing of the ModelZoo era (reference §4.14)
  m.def("npu_max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("npu_max_backward(Tensor grad, int dim, Tensor indices, SymInt[] sizes, bool keepdim) -> Tensor");
  m.def("npu_slice(Tensor self, int[] offsets, int[] size) -> Tensor");
  m.def("npu_slice.out(Tensor self, int[] offsets, int[] size, *, Tensor(a!) out) -> Tensor(a!)");

  // ---- softmax, loss, layout
  m.def("npu_scaled_masked_softmax(Tensor x, Tensor mask, Scalar scale=1, bool fixed_triu_mask=False) -> Tensor");
  m.def(
      "npu_scaled_masked_softmax_backward(Tensor y_grad, Tensor y, Tensor mask, Scalar scale, bool fixed_triu_mask) "
      "-> Tensor");
  m.def(
      "npu_cross_entropy_loss(Tensor input, Tensor target, Tensor? weight=None, str reduction='mean', "
      "int ignore_index=-100, float label_smoothing=0.0, float lse_square_scale_for_zloss=0.0, "
      "bool return_zloss=False) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "npu_cross_entropy_loss_backward(Tensor grad_loss, Tensor log_prob, Tensor target, Tensor? weight=None, "
      "Tensor? grad_zloss=None, Tensor? lse_for_zloss=None, str reduction='mean', int ignore_index=-100, "
      "float label_smoothing=0.0, float lse_square_scale_for_zloss=0.0) -> Tensor");
  m.def("npu_confusion_transpose(Tensor self, int[] perm, int[] shape, bool transpose_first) -> Tensor");
  m.def("npu_confusion_transpose_backward(Tensor grad, int[] perm, int[] shape, bool transpose_first) -> Tensor");
  m.def("npu_sign_bits_pack(Tensor self, int size) -> Tensor");
  m.def("npu_sign_bits_unpack(Tensor input, int size, ScalarType dtype) -> Tensor");

  // ---- MoE
  m.def(
      "npu_grouped_matmul(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
      "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
      "Tensor[]? per_token_scale=None, Tensor? group_list=None, Tensor[]? activation_input=None, "
      "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
      "int? group_type=None, int? group_list_type=0, int? act_type=0, int[]? tuning_config=None, "
      "int? output_dtype=None, int? x_dtype=None, int? weight_dtype=None, int? scale_dtype=None, "
      "int? per_token_scale_dtype=None) -> Tensor[]");
  m.def(
      "npu_moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens=None, bool padded_mode=False) "
      "-> (Tensor, Tensor)");
  m.def(
      "npu_moe_token_unpermute(Tensor permuted_tokens, Tensor sorted_indices, Tensor? probs=None, "
      "bool padded_mode=False, int[]? restore_shape=None) -> Tensor");
  m.def(
      "npu_moe_gating_top_k_softmax(Tensor x, Tensor? finished=None, int k=1) -> (Tensor, Tensor, Tensor)");
  m.def(
      "npu_moe_init_routing_v2(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
      "int active_num=-1, int expert_capacity=-1, int expert_num=-1, int drop_pad_mode=0, "
      "int expert_tokens_num_type=0, bool expert_tokens_num_flag=False, int quant_mode=-1, "
      "int[2] active_expert_range=[], int row_idx_type=0, int? x_dtype=None) "
      "-> (Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "npu_moe_finalize_routing(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, "
      "Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row, int? drop_pad_mode=0, "
      "int? k=1) -> Tensor");

  // ---- optimizers
  m.def(
      "npu_apply_adam_w(Scalar beta1_power, Scalar beta2_power, Scalar lr, Scalar weight_decay, Scalar beta1, "
      "Scalar beta2, Scalar epsilon, Tensor grad, Tensor? max_grad_norm, bool? amsgrad, bool? maximize) "
      "-> (Tensor, Tensor, Tensor)");
  m.def(
      "npu_apply_adam_w.out(Scalar beta1_power, Scalar beta2_power, Scalar lr, Scalar weight_decay, Scalar beta1, "
      "Scalar beta2, Scalar epsilon, Tensor grad, Tensor? max_grad_norm, bool? amsgrad, bool? maximize, *, "
      "Tensor(a!) var, Tensor(b!) m, Tensor(c!) v) -> (Tensor(a!), Tensor(b!), Tensor(c!))");
  m.def(
      "npu_apply_adam(Scalar beta1_power, Scalar beta2_power, Scalar lr, Scalar beta1, Scalar beta2, "
      "Scalar epsilon, Tensor grad, bool? use_locking, bool? use_nesterov) -> (Tensor, Tensor, Tensor)");
  m.def(
      "npu_apply_adam.out(Scalar beta1_power, Scalar beta2_power, Scalar lr, Scalar beta1, Scalar beta2, "
      "Scalar epsilon, Tensor grad, bool? use_locking, bool? use_nesterov, *, Tensor(a!) var, Tensor(b!) m, "
      "Tensor(c!) v) -> (Tensor(a!), Tensor(b!), Tensor(c!))");

  m.def(
      "npu_bert_apply_adam(Scalar lr, Scalar beta1, Scalar beta2, Scalar epsilon, Tensor grad, "
      "Scalar max_grad_norm, Scalar global_grad_norm, Scalar weight_decay, Scalar? step_size=None, "
      "int adam_mode=0) -> (Tensor var, Tensor m, Tensor v)");
  m.def(
      "npu_bert_apply_adam.out(Scalar lr, Scalar beta1, Scalar beta2, Scalar epsilon, Tensor grad, "
      "Scalar max_grad_norm, Scalar global_grad_norm, Scalar weight_decay, Scalar? step_size=None, "
      "int adam_mode=0, *, Tensor(a!) var, Tensor(b!) m, Tensor(c!) v) -> (Tensor(a!), Tensor(b!), Tensor(c!))");

  // ---- attention (inference)
  m.def(
      "npu_prompt_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, "
      "Tensor? atten_mask=None, Tensor? pse_shift=None, int[]? actual_seq_lengths=None, Tensor? deq_scale1=None, "
      "Tensor? quant_scale1=None, Tensor? deq_scale2=None, Tensor? quant_scale2=None, Tensor? quant_offset2=None, "
      "int num_heads=1, float scale_value=1.0, int pre_tokens=2147483647, int next_tokens=0, "
      "str input_layout=\"BSH\", int num_key_value_heads=0, int[]? actual_seq_lengths_kv=None, "
      "int sparse_mode=0) -> Tensor");
  m.def(
      "npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, "
      "Tensor? atten_mask=None, Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, "
      "Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? block_table=None, "
      "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
      "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? kv_padding_size=None, int num_heads=1, "
      "float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, int block_size=0, "
      "int inner_precise=1) -> Tensor");
  m.def(
      "npu_fused_infer_attention_score(Tensor query, Tensor key, Tensor value, *, Tensor? pse_shift=None, "
      "Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, SymInt[]? actual_seq_lengths_kv=None, "
      "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
      "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? antiquant_scale=None, "
      "Tensor? antiquant_offset=None, Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, "
      "Tensor? value_antiquant_scale=None, Tensor? value_antiquant_offset=None, Tensor? block_table=None, "
      "Tensor? query_padding_size=None, Tensor? kv_padding_size=None, Tensor? key_shared_prefix=None, "
      "Tensor? value_shared_prefix=None, SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, "
      "int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout=\"BSH\", "
      "int num_key_value_heads=0, int sparse_mode=0, int inner_precise=0, int block_size=0, "
      "int antiquant_mode=0, int key_antiquant_mode=0, int value_antiquant_mode=0, "
      "bool softmax_lse_flag=False) -> (Tensor, Tensor)");
  // The out= form (graph capture and task updates, vllm-ascend): `workspace` from
  // _npu_fused_infer_attention_score_get_max_workspace, results into `out` = [attention_out, softmax_lse].
  m.def("npu_fused_infer_attention_score.out(Tensor query, Tensor key, Tensor value, *, Tensor? pse_shift=None, "
      "Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, SymInt[]? actual_seq_lengths_kv=None, "
      "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
      "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? antiquant_scale=None, "
      "Tensor? antiquant_offset=None, Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, "
      "Tensor? value_antiquant_scale=None, Tensor? value_antiquant_offset=None, Tensor? block_table=None, "
      "Tensor? query_padding_size=None, Tensor? kv_padding_size=None, Tensor? key_shared_prefix=None, "
      "Tensor? value_shared_prefix=None, SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, "
      "int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout=\"BSH\", "
      "int num_key_value_heads=0, int sparse_mode=0, int inner_precise=0, int block_size=0, "
      "int antiquant_mode=0, int key_antiquant_mode=0, int value_antiquant_mode=0, "
      "bool softmax_lse_flag=False, Tensor? workspace=None, "
      "Tensor(a!)[] out) -> Tensor(a!)[]");
  m.def("_npu_fused_infer_attention_score_get_max_workspace(Tensor query, Tensor key, Tensor value, *, Tensor? pse_shift=None, "
      "Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, SymInt[]? actual_seq_lengths_kv=None, "
      "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
      "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? antiquant_scale=None, "
      "Tensor? antiquant_offset=None, Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, "
      "Tensor? value_antiquant_scale=None, Tensor? value_antiquant_offset=None, Tensor? block_table=None, "
      "Tensor? query_padding_size=None, Tensor? kv_padding_size=None, Tensor? key_shared_prefix=None, "
      "Tensor? value_shared_prefix=None, SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, "
      "int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout=\"BSH\", "
      "int num_key_value_heads=0, int sparse_mode=0, int inner_precise=0, int block_size=0, "
      "int antiquant_mode=0, int key_antiquant_mode=0, int value_antiquant_mode=0, "
      "bool softmax_lse_flag=False) -> Tensor");
  m.def(
      "_npu_fused_infer_attention_score_infer_output(Tensor query, Tensor value, *, Tensor? quant_scale2=None, "
      "Tensor? block_table=None, Tensor? query_rope=None, int num_heads=1, int num_key_value_heads=0, "
      "str input_layout=\"BSH\", bool softmax_lse_flag=False) -> (Tensor, Tensor)");
  m.def("npu_fused_infer_attention_score_v2(Tensor query, Tensor key, Tensor value, *, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_qlen=None, "
      "SymInt[]? actual_seq_kvlen=None, Tensor? block_table=None, Tensor? dequant_scale_query=None, "
      "Tensor? dequant_scale_key=None, Tensor? dequant_offset_key=None, Tensor? dequant_scale_value=None, "
      "Tensor? dequant_offset_value=None, Tensor? dequant_scale_key_rope=None, Tensor? quant_scale_out=None, "
      "Tensor? quant_offset_out=None, Tensor? learnable_sink=None, int num_query_heads=1, "
      "int num_key_value_heads=0, float softmax_scale=1.0, int pre_tokens=2147483647, "
      "int next_tokens=2147483647, str input_layout=\"BSH\", int sparse_mode=0, int block_size=0, "
      "int query_quant_mode=0, int key_quant_mode=0, int value_quant_mode=0, int inner_precise=0, "
      "bool return_softmax_lse=False, int? query_dtype=None, int? key_dtype=None, int? value_dtype=None, "
      "int? query_rope_dtype=None, int? key_rope_dtype=None, int? key_shared_prefix_dtype=None, "
      "int? value_shared_prefix_dtype=None, int? dequant_scale_query_dtype=None, "
      "int? dequant_scale_key_dtype=None, int? dequant_scale_value_dtype=None, "
      "int? dequant_scale_key_rope_dtype=None, int? out_dtype=None) -> (Tensor, Tensor)");
  m.def("npu_fused_infer_attention_score_v2.out(Tensor query, Tensor key, Tensor value, *, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_qlen=None, "
      "SymInt[]? actual_seq_kvlen=None, Tensor? block_table=None, Tensor? dequant_scale_query=None, "
      "Tensor? dequant_scale_key=None, Tensor? dequant_offset_key=None, Tensor? dequant_scale_value=None, "
      "Tensor? dequant_offset_value=None, Tensor? dequant_scale_key_rope=None, Tensor? quant_scale_out=None, "
      "Tensor? quant_offset_out=None, Tensor? learnable_sink=None, int num_query_heads=1, "
      "int num_key_value_heads=0, float softmax_scale=1.0, int pre_tokens=2147483647, "
      "int next_tokens=2147483647, str input_layout=\"BSH\", int sparse_mode=0, int block_size=0, "
      "int query_quant_mode=0, int key_quant_mode=0, int value_quant_mode=0, int inner_precise=0, "
      "bool return_softmax_lse=False, int? query_dtype=None, int? key_dtype=None, int? value_dtype=None, "
      "int? query_rope_dtype=None, int? key_rope_dtype=None, int? key_shared_prefix_dtype=None, "
      "int? value_shared_prefix_dtype=None, int? dequant_scale_query_dtype=None, "
      "int? dequant_scale_key_dtype=None, int? dequant_scale_value_dtype=None, "
      "int? dequant_scale_key_rope_dtype=None, int? out_dtype=None, Tensor? workspace=None, "
      "Tensor(a!)[] out) -> Tensor(a!)[]");
  m.def("_npu_fused_infer_attention_score_v2_get_max_workspace(Tensor query, Tensor key, Tensor value, *, Tensor? query_rope=None, "
      "Tensor? key_rope=None, Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_qlen=None, "
      "SymInt[]? actual_seq_kvlen=None, Tensor? block_table=None, Tensor? dequant_scale_query=None, "
      "Tensor? dequant_scale_key=None, Tensor? dequant_offset_key=None, Tensor? dequant_scale_value=None, "
      "Tensor? dequant_offset_value=None, Tensor? dequant_scale_key_rope=None, Tensor? quant_scale_out=None, "
      "Tensor? quant_offset_out=None, Tensor? learnable_sink=None, int num_query_heads=1, "
      "int num_key_value_heads=0, float softmax_scale=1.0, int pre_tokens=2147483647, "
      "int next_tokens=2147483647, str input_layout=\"BSH\", int sparse_mode=0, int block_size=0, "
      "int query_quant_mode=0, int key_quant_mode=0, int value_quant_mode=0, int inner_precise=0, "
      "bool return_softmax_lse=False, int? query_dtype=None, int? key_dtype=None, int? value_dtype=None, "
      "int? query_rope_dtype=None, int? key_rope_dtype=None, int? key_shared_prefix_dtype=None, "
      "int? value_shared_prefix_dtype=None, int? dequant_scale_query_dtype=None, "
      "int? dequant_scale_key_dtype=None, int? dequant_scale_value_dtype=None, "
      "int? dequant_scale_key_rope_dtype=None, int? out_dtype=None) -> Tensor");
  m.def(
      "_npu_fused_infer_attention_score_v2_infer_output(Tensor query, Tensor value, *, Tensor? quant_scale_out=None, "
      "Tensor? block_table=None, Tensor? query_rope=None, int num_query_heads=1, int num_key_value_heads=0, "
      "str input_layout=\"BSH\", bool return_softmax_lse=False, int? query_dtype=None, int? value_dtype=None, "
      "int? out_dtype=None) -> (Tensor, Tensor)");
  // ATB's paged attention (vllm-ascend decode): the query of each sequence against the keys
  // and values its block table gathers from the caches, over its context length.
  m.def(
      "_npu_paged_attention(Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, int num_heads, "
      "float scale_value, Tensor block_table, Tensor context_lens, Tensor(a!) out) -> ()");

  // ---- caches
  m.def("npu_scatter_nd_update_(Tensor(a!) self, Tensor indices, Tensor updates) -> Tensor(a!)");

  // ---- quantisation
  m.def(
      "npu_dynamic_quant(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
      "int? dst_type=None, str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor)");
  m.def(
      "npu_quant_matmul(Tensor x1, Tensor x2, Tensor scale, *, Tensor? offset=None, Tensor? pertoken_scale=None, "
      "Tensor? bias=None, int? output_dtype=None, int? x1_dtype=None, int? x2_dtype=None, "
      "int? pertoken_scale_dtype=None, int? scale_dtype=None, int[]? group_sizes=None, Tensor? y_scale=None) "
      "-> Tensor");
}

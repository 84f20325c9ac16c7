#include "perf/OperatorKind.h"

#include <algorithm>
#include <array>
#include <utility>

namespace npusim::perf {
namespace {

using Entry = std::pair<std::string_view, OperatorKind>;
using K = OperatorKind;

// Base names (namespace, overload and in-place underscore removed).
constexpr Entry kExactNames[] = {
    // Cube
    {"mm", K::kMatmul}, {"matmul", K::kMatmul}, {"mv", K::kMatmul}, {"dot", K::kMatmul}, {"vdot", K::kMatmul},
    {"inner", K::kMatmul}, {"outer", K::kMatmul}, {"ger", K::kMatmul}, {"_scaled_mm", K::kMatmul},
    {"npu_mm", K::kMatmul}, {"npu_bmmV2", K::kBatchedMatmul}, {"bmm", K::kBatchedMatmul},
    {"addmm", K::kAddMatmul}, {"addmv", K::kAddMatmul}, {"baddbmm", K::kAddMatmul}, {"addbmm", K::kAddMatmul},
    {"addr", K::kAddMatmul}, {"_addmm_activation", K::kAddMatmul}, {"linear", K::kLinear},
    {"npu_linear", K::kLinear}, {"_trilinear", K::kMatmul},
    // Element-wise, cheap
    {"add", K::kElementwise}, {"sub", K::kElementwise}, {"subtract", K::kElementwise}, {"rsub", K::kElementwise},
    {"mul", K::kElementwise}, {"multiply", K::kElementwise}, {"div", K::kElementwise}, {"divide", K::kElementwise},
    {"true_divide", K::kElementwise}, {"floor_divide", K::kElementwise}, {"neg", K::kElementwise},
    {"negative", K::kElementwise}, {"abs", K::kElementwise}, {"sign", K::kElementwise}, {"sgn", K::kElementwise},
    {"relu", K::kElementwise}, {"relu6", K::kElementwise}, {"hardtanh", K::kElementwise},
    {"leaky_relu", K::kElementwise}, {"threshold", K::kElementwise}, {"clamp", K::kElementwise},
    {"clamp_min", K::kElementwise}, {"clamp_max", K::kElementwise}, {"clip", K::kElementwise},
    {"where", K::kElementwise}, {"maximum", K::kElementwise}, {"minimum", K::kElementwise},
    {"fmax", K::kElementwise}, {"fmin", K::kElementwise}, {"eq", K::kElementwise}, {"ne", K::kElementwise},
    {"lt", K::kElementwise}, {"le", K::kElementwise}, {"gt", K::kElementwise}, {"ge", K::kElementwise},
    {"equal", K::kReduction}, {"logical_and", K::kElementwise}, {"logical_or", K::kElementwise},
    {"logical_not", K::kElementwise}, {"logical_xor", K::kElementwise}, {"bitwise_and", K::kElementwise},
    {"bitwise_or", K::kElementwise}, {"bitwise_xor", K::kElementwise}, {"bitwise_not", K::kElementwise},
    {"__and__", K::kElementwise}, {"__or__", K::kElementwise}, {"__xor__", K::kElementwise},
    {"__lshift__", K::kElementwise}, {"__rshift__", K::kElementwise}, {"masked_fill", K::kElementwise},
    {"floor", K::kElementwise}, {"ceil", K::kElementwise}, {"round", K::kElementwise},
    {"trunc", K::kElementwise}, {"frac", K::kElementwise}, {"remainder", K::kElementwise},
    {"fmod", K::kElementwise}, {"addcmul", K::kElementwise}, {"addcdiv", K::kElementwise},
    {"lerp", K::kElementwise}, {"square", K::kElementwise}, {"reciprocal", K::kElementwise},
    {"isnan", K::kElementwise}, {"isinf", K::kElementwise}, {"isfinite", K::kElementwise},
    {"isneginf", K::kElementwise}, {"isposinf", K::kElementwise}, {"nan_to_num", K::kElementwise},
    {"copysign", K::kElementwise}, {"hardswish", K::kElementwise}, {"hardsigmoid", K::kElementwise},
    {"heaviside", K::kElementwise}, {"threshold_backward", K::kElementwise},
    {"leaky_relu_backward", K::kElementwise}, {"hardtanh_backward", K::kElementwise},
    {"hardswish_backward", K::kElementwise}, {"hardsigmoid_backward", K::kElementwise},
    {"sigmoid_backward", K::kElementwise}, {"tanh_backward", K::kElementwise}, {"mse_loss", K::kElementwise},
    {"mse_loss_backward", K::kElementwise}, {"l1_loss", K::kElementwise}, {"smooth_l1_loss", K::kElementwise},
    {"smooth_l1_loss_backward", K::kElementwise}, {"nll_loss_backward", K::kElementwise},
    {"nll_loss2d_backward", K::kElementwise}, {"_amp_update_scale", K::kElementwise},
    {"_amp_foreach_non_finite_check_and_unscale", K::kOptimizerFused},
    // Element-wise, transcendental
    {"exp", K::kActivation}, {"exp2", K::kActivation}, {"expm1", K::kActivation}, {"log", K::kActivation},
    {"log2", K::kActivation}, {"log10", K::kActivation}, {"log1p", K::kActivation}, {"sqrt", K::kActivation},
    {"rsqrt", K::kActivation}, {"sigmoid", K::kActivation}, {"tanh", K::kActivation}, {"gelu", K::kActivation},
    {"gelu_backward", K::kActivation}, {"silu", K::kActivation}, {"silu_backward", K::kActivation},
    {"mish", K::kActivation}, {"mish_backward", K::kActivation}, {"softplus", K::kActivation},
    {"softplus_backward", K::kActivation}, {"elu", K::kActivation}, {"elu_backward", K::kActivation},
    {"selu", K::kActivation}, {"celu", K::kActivation}, {"erf", K::kActivation}, {"erfc", K::kActivation},
    {"erfinv", K::kActivation}, {"sin", K::kActivation}, {"cos", K::kActivation}, {"tan", K::kActivation},
    {"asin", K::kActivation}, {"acos", K::kActivation}, {"atan", K::kActivation}, {"atan2", K::kActivation},
    {"sinh", K::kActivation}, {"cosh", K::kActivation}, {"asinh", K::kActivation}, {"acosh", K::kActivation},
    {"atanh", K::kActivation}, {"pow", K::kActivation}, {"float_power", K::kActivation},
    {"logit", K::kActivation}, {"log_sigmoid_forward", K::kActivation}, {"log_sigmoid_backward", K::kActivation},
    {"glu", K::kActivation}, {"glu_backward", K::kActivation}, {"logaddexp", K::kActivation},
    {"logaddexp2", K::kActivation}, {"digamma", K::kActivation}, {"lgamma", K::kActivation},
    {"polygamma", K::kActivation}, {"xlogy", K::kActivation}, {"sinc", K::kActivation},
    {"npu_swiglu", K::kActivation}, {"npu_swiglu_backward", K::kActivation}, {"npu_rotary_mul", K::kActivation},
    {"npu_rotary_mul_backward", K::kActivation}, {"npu_gelu", K::kActivation},
    {"npu_gelu_backward", K::kActivation}, {"npu_silu", K::kActivation},
    // Reductions and losses
    {"sum", K::kReduction}, {"mean", K::kReduction}, {"prod", K::kReduction}, {"max", K::kReduction},
    {"min", K::kReduction}, {"amax", K::kReduction}, {"amin", K::kReduction}, {"aminmax", K::kReduction},
    {"argmax", K::kReduction}, {"argmin", K::kReduction}, {"all", K::kReduction}, {"any", K::kReduction},
    {"norm", K::kReduction}, {"linalg_vector_norm", K::kReduction}, {"frobenius_norm", K::kReduction},
    {"var", K::kReduction}, {"std", K::kReduction}, {"var_mean", K::kReduction}, {"std_mean", K::kReduction},
    {"logsumexp", K::kReduction}, {"cumsum", K::kReduction}, {"cumprod", K::kReduction},
    {"cummax", K::kReduction}, {"cummin", K::kReduction}, {"logcumsumexp", K::kReduction},
    {"count_nonzero", K::kReduction}, {"nansum", K::kReduction}, {"nanmean", K::kReduction},
    {"nll_loss", K::kReduction}, {"nll_loss_forward", K::kReduction}, {"nll_loss2d_forward", K::kReduction},
    {"nll_loss_nd", K::kReduction}, {"cross_entropy_loss", K::kReduction},
    {"binary_cross_entropy", K::kReduction}, {"binary_cross_entropy_backward", K::kElementwise},
    {"binary_cross_entropy_with_logits", K::kReduction}, {"kl_div", K::kReduction}, {"trace", K::kReduction},
    {"dist", K::kReduction}, {"_cdist_forward", K::kMatmul}, {"allclose", K::kReduction},
    {"isclose", K::kElementwise},
    // Normalisation
    {"batch_norm", K::kNormalization}, {"native_batch_norm", K::kNormalization},
    {"_native_batch_norm_legit", K::kNormalization}, {"_native_batch_norm_legit_no_training", K::kNormalization},
    {"_batch_norm_impl_index", K::kNormalization}, {"batch_norm_stats", K::kReduction},
    {"batch_norm_elemt", K::kElementwise}, {"batch_norm_gather_stats_with_counts", K::kReduction},
    {"batch_norm_backward_reduce", K::kReduction}, {"batch_norm_backward_elemt", K::kElementwise},
    {"layer_norm", K::kNormalization}, {"native_layer_norm", K::kNormalization},
    {"group_norm", K::kNormalization}, {"native_group_norm", K::kNormalization},
    {"instance_norm", K::kNormalization}, {"rms_norm", K::kNormalization}, {"_fused_rms_norm", K::kNormalization},
    {"npu_rms_norm", K::kNormalization}, {"npu_layer_norm_eval", K::kNormalization},
    {"npu_batch_norm", K::kNormalization}, {"npu_add_rms_norm", K::kNormalization},
    // Data movement
    {"copy", K::kDataMovement}, {"_copy_from", K::kDataMovement}, {"_copy_from_and_resize", K::kDataMovement},
    {"_to_copy", K::kDataMovement}, {"to", K::kDataMovement}, {"clone", K::kDataMovement},
    {"contiguous", K::kDataMovement}, {"cat", K::kDataMovement}, {"_cat", K::kDataMovement},
    {"concat", K::kDataMovement}, {"concatenate", K::kDataMovement}, {"stack", K::kDataMovement},
    {"hstack", K::kDataMovement}, {"vstack", K::kDataMovement}, {"constant_pad_nd", K::kDataMovement},
    {"pad", K::kDataMovement}, {"reflection_pad1d", K::kDataMovement}, {"reflection_pad2d", K::kDataMovement},
    {"replication_pad1d", K::kDataMovement}, {"replication_pad2d", K::kDataMovement},
    {"flip", K::kDataMovement}, {"roll", K::kDataMovement}, {"repeat", K::kDataMovement},
    {"repeat_interleave", K::kDataMovement}, {"tile", K::kDataMovement}, {"tril", K::kDataMovement},
    {"triu", K::kDataMovement}, {"diag", K::kDataMovement}, {"diag_embed", K::kDataMovement},
    {"im2col", K::kDataMovement}, {"col2im", K::kDataMovement}, {"upsample_nearest1d", K::kDataMovement},
    {"upsample_nearest2d", K::kDataMovement}, {"upsample_nearest3d", K::kDataMovement},
    {"upsample_bilinear2d", K::kDataMovement}, {"upsample_bicubic2d", K::kDataMovement},
    {"upsample_linear1d", K::kDataMovement}, {"grid_sampler_2d", K::kIndexing},
    {"pixel_shuffle", K::kDataMovement}, {"pixel_unshuffle", K::kDataMovement},
    {"channel_shuffle", K::kDataMovement}, {"_local_scalar_dense", K::kDataMovement},
    {"npu_format_cast", K::kDataMovement}, {"npu_transpose", K::kDataMovement},
    {"npu_confusion_transpose", K::kDataMovement}, {"lift_fresh_copy", K::kDataMovement},
    {"_reshape_copy", K::kDataMovement}, {"narrow_copy", K::kDataMovement}, {"complex", K::kDataMovement},
    {"polar", K::kActivation}, {"type_as", K::kDataMovement}, {"_unsafe_view_copy", K::kDataMovement},
    // Indexing
    {"index", K::kIndexing}, {"_index_put_impl", K::kIndexing}, {"index_put", K::kIndexing},
    {"index_select", K::kIndexing}, {"index_add", K::kIndexing}, {"index_copy", K::kIndexing},
    {"index_fill", K::kIndexing}, {"index_reduce", K::kIndexing}, {"gather", K::kIndexing},
    {"scatter", K::kIndexing}, {"scatter_add", K::kIndexing}, {"scatter_reduce", K::kIndexing},
    {"embedding", K::kIndexing}, {"embedding_dense_backward", K::kIndexing},
    {"embedding_backward", K::kIndexing}, {"_embedding_bag", K::kIndexing}, {"embedding_bag", K::kIndexing},
    {"masked_scatter", K::kIndexing}, {"masked_select", K::kIndexing}, {"nonzero", K::kIndexing},
    {"nonzero_static", K::kIndexing}, {"argwhere", K::kIndexing}, {"take", K::kIndexing},
    {"take_along_dim", K::kIndexing}, {"put", K::kIndexing}, {"searchsorted", K::kIndexing},
    {"bucketize", K::kIndexing}, {"_unsafe_index", K::kIndexing}, {"_unsafe_index_put", K::kIndexing},
    {"histc", K::kIndexing}, {"bincount", K::kIndexing}, {"one_hot", K::kIndexing},
    {"_unsafe_masked_index", K::kIndexing},
    // Sorting
    {"sort", K::kSort}, {"topk", K::kSort}, {"argsort", K::kSort}, {"kthvalue", K::kSort},
    {"median", K::kSort}, {"nanmedian", K::kSort}, {"mode", K::kSort}, {"unique", K::kSort},
    {"_unique", K::kSort}, {"_unique2", K::kSort}, {"unique_consecutive", K::kSort}, {"unique_dim", K::kSort},
    {"msort", K::kSort}, {"quantile", K::kSort}, {"nanquantile", K::kSort},
    // Random
    {"rand", K::kRandom}, {"randn", K::kRandom}, {"randint", K::kRandom}, {"rand_like", K::kRandom},
    {"randn_like", K::kRandom}, {"randint_like", K::kRandom}, {"randperm", K::kRandom},
    {"bernoulli", K::kRandom}, {"normal", K::kRandom}, {"uniform", K::kRandom}, {"multinomial", K::kRandom},
    {"exponential", K::kRandom}, {"geometric", K::kRandom}, {"cauchy", K::kRandom},
    {"log_normal", K::kRandom}, {"random", K::kRandom}, {"native_dropout", K::kRandom},
    {"dropout", K::kRandom}, {"feature_dropout", K::kRandom}, {"alpha_dropout", K::kRandom},
    {"poisson", K::kRandom}, {"native_dropout_backward", K::kElementwise}, {"npu_dropout_do_mask", K::kElementwise},
    {"npu_dropout_gen_mask", K::kRandom}, {"_fused_dropout", K::kRandom},
    // No kernel
    {"view", K::kView}, {"_unsafe_view", K::kView}, {"reshape", K::kView}, {"_reshape_alias", K::kView},
    {"as_strided", K::kView}, {"transpose", K::kView}, {"t", K::kView}, {"permute", K::kView},
    {"expand", K::kView}, {"expand_as", K::kView}, {"slice", K::kView}, {"select", K::kView},
    {"narrow", K::kView}, {"squeeze", K::kView}, {"unsqueeze", K::kView}, {"detach", K::kView},
    {"alias", K::kView}, {"unfold", K::kView}, {"view_as", K::kView}, {"view_as_real", K::kView},
    {"view_as_complex", K::kView}, {"split", K::kView}, {"split_with_sizes", K::kView}, {"chunk", K::kView},
    {"tensor_split", K::kView}, {"unbind", K::kView}, {"diagonal", K::kView}, {"movedim", K::kView},
    {"moveaxis", K::kView}, {"swapaxes", K::kView}, {"swapdims", K::kView}, {"flatten", K::kView},
    {"unflatten", K::kView}, {"resize", K::kView}, {"resize_as", K::kView}, {"set", K::kView},
    {"empty", K::kView}, {"empty_like", K::kView}, {"empty_strided", K::kView}, {"new_empty", K::kView},
    {"new_empty_strided", K::kView}, {"lift_fresh", K::kView}, {"real", K::kView}, {"imag", K::kView},
    {"conj", K::kView}, {"_conj", K::kView}, {"_neg_view", K::kView}, {"positive", K::kView},
    {"numpy_T", K::kView}, {"mT", K::kView}, {"mH", K::kView}, {"adjoint", K::kView},
    {"record_stream", K::kView}, {"_has_compatible_shallow_copy_type", K::kView}, {"is_pinned", K::kView},
    {"_pin_memory", K::kView}, {"requires_grad", K::kView}, {"_version", K::kView}, {"storage_offset", K::kView},
    {"_reshape_alias_copy", K::kView}, {"as_strided_scatter", K::kDataMovement},
    {"slice_scatter", K::kDataMovement}, {"select_scatter", K::kDataMovement},
    {"diagonal_scatter", K::kDataMovement},
    // Factories that write
    {"fill", K::kFactory}, {"zero", K::kFactory}, {"zeros", K::kFactory}, {"zeros_like", K::kFactory},
    {"ones", K::kFactory}, {"ones_like", K::kFactory}, {"full", K::kFactory}, {"full_like", K::kFactory},
    {"new_zeros", K::kFactory}, {"new_ones", K::kFactory}, {"new_full", K::kFactory}, {"arange", K::kFactory},
    {"linspace", K::kFactory}, {"logspace", K::kFactory}, {"eye", K::kFactory}, {"scalar_tensor", K::kFactory},
    // Optimisers
    {"npu_apply_adam", K::kOptimizerFused}, {"npu_apply_adam_w", K::kOptimizerFused},
    {"_fused_adam", K::kOptimizerFused}, {"_fused_adamw", K::kOptimizerFused}, {"_fused_sgd", K::kOptimizerFused},
    {"_fused_adagrad", K::kOptimizerFused},
};

constexpr bool startsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}
constexpr bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
constexpr bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// "aten::add_.Tensor" -> "add"; "__and__" stays.
std::string_view baseName(std::string_view name) {
  if (const auto colons = name.rfind("::"); colons != std::string_view::npos) name = name.substr(colons + 2);
  if (const auto dot = name.find('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  if (name.size() > 1 && name.back() == '_' && !endsWith(name, "__")) name.remove_suffix(1);
  return name;
}

const std::array<Entry, std::size(kExactNames)>& sortedNames() {
  static const auto table = [] {
    std::array<Entry, std::size(kExactNames)> sorted{};
    std::copy(std::begin(kExactNames), std::end(kExactNames), sorted.begin());
    std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.first < b.first; });
    return sorted;
  }();
  return table;
}

bool findExact(std::string_view name, OperatorKind& kind) {
  const auto& table = sortedNames();
  const auto it = std::lower_bound(table.begin(), table.end(), name,
                                   [](const Entry& e, std::string_view n) { return e.first < n; });
  if (it == table.end() || it->first != name) return false;
  kind = it->second;
  return true;
}

}  // namespace

OperatorKind classifyOperator(std::string_view atenName) {
  const std::string_view name = baseName(atenName);
  OperatorKind kind = OperatorKind::kOther;
  if (findExact(name, kind)) return kind;

  // Families recognised by their spelling.
  if (startsWith(name, "_foreach_") || startsWith(name, "npu_apply_")) {
    return OperatorKind::kOptimizerFused;
  }
  if (contains(name, "attention")) {
    return contains(name, "backward") || endsWith(name, "_grad") ? OperatorKind::kAttentionBackward
                                                                 : OperatorKind::kAttention;
  }
  if (contains(name, "conv") && !contains(name, "convert")) {
    if (contains(name, "backward")) return OperatorKind::kConvolutionBackward;
    return OperatorKind::kConvolution;
  }
  if (contains(name, "softmax")) return OperatorKind::kSoftmax;
  if (contains(name, "pool")) return OperatorKind::kPooling;
  if (contains(name, "batch_norm") || contains(name, "layer_norm") || contains(name, "group_norm") ||
      contains(name, "rms_norm") || contains(name, "instance_norm")) {
    return OperatorKind::kNormalization;
  }
  if (endsWith(name, "_copy")) return OperatorKind::kDataMovement;  // functionalised view copies
  if (endsWith(name, "_scatter")) return OperatorKind::kDataMovement;
  // A backward we do not know by name costs like its forward.
  for (std::string_view suffix : {"_backward_data", "_backward"}) {
    if (endsWith(name, suffix)) {
      const std::string_view forward = name.substr(0, name.size() - suffix.size());
      if (findExact(forward, kind)) return kind == OperatorKind::kView ? OperatorKind::kDataMovement : kind;
      return OperatorKind::kElementwise;
    }
  }
  return OperatorKind::kOther;
}

std::string_view operatorKindName(OperatorKind kind) noexcept {
  switch (kind) {
    case OperatorKind::kMatmul: return "matmul";
    case OperatorKind::kBatchedMatmul: return "batched_matmul";
    case OperatorKind::kAddMatmul: return "add_matmul";
    case OperatorKind::kLinear: return "linear";
    case OperatorKind::kConvolution: return "convolution";
    case OperatorKind::kConvolutionBackward: return "convolution_backward";
    case OperatorKind::kAttention: return "attention";
    case OperatorKind::kAttentionBackward: return "attention_backward";
    case OperatorKind::kElementwise: return "elementwise";
    case OperatorKind::kActivation: return "activation";
    case OperatorKind::kReduction: return "reduction";
    case OperatorKind::kNormalization: return "normalization";
    case OperatorKind::kSoftmax: return "softmax";
    case OperatorKind::kPooling: return "pooling";
    case OperatorKind::kDataMovement: return "data_movement";
    case OperatorKind::kIndexing: return "indexing";
    case OperatorKind::kSort: return "sort";
    case OperatorKind::kRandom: return "random";
    case OperatorKind::kView: return "view";
    case OperatorKind::kFactory: return "factory";
    case OperatorKind::kOptimizerFused: return "optimizer_fused";
    case OperatorKind::kOther: return "other";
  }
  return "other";
}

}  // namespace npusim::perf

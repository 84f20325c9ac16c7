// torch_npu's inference attention (reference §5.1, §5.2):
// npu_prompt_flash_attention (prefill), npu_incre_flash_attention (decode) and
// npu_fused_infer_attention_score (both, chosen by Q_S). softmax(scale*QK^T +
// pse_shift, masked)·V with GQA, per-batch valid lengths and sparse modes 0-4,
// in fp32, on contiguous (non-paged, unquantised) key/value; fp16 prompt
// attention without pse_shift in the high-performance mode (QK^T and the
// probabilities in fp16).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cctype>

#include "ops/AttentionMath.h"
#include "ops/BoxedArguments.h"
#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;

struct InferLayout {
  AttentionLayout input = AttentionLayout::kBSH;
  AttentionLayout output = AttentionLayout::kBSH;
};

InferLayout parseInferLayout(c10::string_view text, const char* op) {
  std::string upper(text);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "BSH") return {AttentionLayout::kBSH, AttentionLayout::kBSH};
  if (upper == "BSND") return {AttentionLayout::kBSND, AttentionLayout::kBSND};
  if (upper == "BNSD") return {AttentionLayout::kBNSD, AttentionLayout::kBNSD};
  if (upper == "BNSD_BSND") return {AttentionLayout::kBNSD, AttentionLayout::kBSND};
  TORCH_CHECK(false, op, ": input_layout ", text,
              " is not supported by npusim (supported: BSH, BSND, BNSD, BNSD_BSND; TND, NBSD and paged layouts are "
              "not simulated).",
              notSupported());
  return {};
}

struct InferArguments {
  const char* op = "";
  int64_t heads = 1, kvHeads = 0;
  double scale = 1;
  int64_t pre = 0, next = 0, sparseMode = 0;
  std::vector<int64_t> seqQ, seqKv;  // per-batch valid lengths (empty: all)
  bool highPerformance = false;      // fp16 high-performance mode (AttentionProblem::halfScores)
};

struct InferResult {
  Tensor out;
  Tensor lse;  // fp32 [B, N, Sq, 1]
  double fraction = 1;
  int64_t batch = 0, sq = 0, skv = 0, headDim = 0, valueDim = 0;
};

Tensor boolMaskOf(const OptionalTensor& mask) {
  if (!mask.has_value()) return Tensor();
  return mask->scalar_type() == at::kBool ? *mask : mask->ne(0);
}

InferResult inferAttention(const Tensor& query, const Tensor& key, const Tensor& value, const OptionalTensor& pse,
                           const OptionalTensor& attenMask, const InferLayout& layout, const InferArguments& a) {
  NPU_OPS_CHECK_VALUE(a.heads > 0, "numHeads should be greater than 0, but got ", a.heads);
  const int64_t kvHeads = a.kvHeads == 0 ? a.heads : a.kvHeads;
  NPU_OPS_CHECK(kvHeads > 0 && a.heads % kvHeads == 0, a.op, ": num_heads (", a.heads,
                ") must be a multiple of num_key_value_heads (", kvHeads, ")");
  NPU_OPS_CHECK(a.sparseMode >= 0 && a.sparseMode <= 4, a.op, ": sparse_mode must be in [0, 4], but got ",
                a.sparseMode);
  const int64_t rank = layout.input == AttentionLayout::kBSH ? 3 : 4;
  NPU_OPS_CHECK(query.dim() == rank && key.dim() == rank && value.dim() == rank, a.op,
                ": query, key and value must be ", rank, "-dimensional for this layout, but got ", query.dim(), ", ",
                key.dim(), " and ", value.dim());
  AttentionProblem p;
  p.q = toBnsd(query, layout.input, a.heads);
  NPU_OPS_CHECK(p.q.size(1) == a.heads, a.op, ": the query has ", p.q.size(1), " heads, but num_heads is ", a.heads);
  p.k = toBnsd(key, layout.input, kvHeads);
  p.v = toBnsd(value, layout.input, kvHeads);
  NPU_OPS_CHECK(p.k.size(1) == kvHeads, a.op, ": the key has ", p.k.size(1), " heads, but num_key_value_heads is ",
                kvHeads);
  p.scale = a.scale;
  p.pseInsideScale = false;  // pse_shift is added after scaling
  if (pse.has_value()) p.pse = *pse;
  // fp16 inputs run the high-performance mode unless a pse_shift asks for the
  // high-precision one (torch_npu's documentation of the operator).
  p.halfScores = a.highPerformance && query.scalar_type() == at::kHalf && !pse.has_value();
  InferResult r;
  r.batch = p.q.size(0), r.sq = p.q.size(2), r.skv = p.k.size(2), r.headDim = p.q.size(3), r.valueDim = p.v.size(3);
  const auto boolOptions = query.options().dtype(at::kBool);
  Tensor masked;
  const Tensor given = boolMaskOf(attenMask);
  if (given.defined()) {
    Tensor shaped = given;
    if (a.sparseMode == 0 || a.sparseMode == 1) {
      // A 2-D or [B, Sq, Skv] mask applies to every head.
      if (shaped.dim() == 2) shaped = shaped.view({1, 1, shaped.size(0), shaped.size(1)});
      if (shaped.dim() == 3) shaped = shaped.unsqueeze(1);
      shaped = shaped.slice(-2, 0, r.sq).slice(-1, 0, r.skv);
    }
    masked = sparseModeMask(a.sparseMode, shaped, r.sq, r.skv, a.pre, a.next, 0, boolOptions);
    r.fraction = attendedFraction(a.sparseMode, true, r.sq, r.skv, a.pre, a.next);
  }
  if (!a.seqKv.empty()) {
    // Keys past a batch's valid length do not take part.
    NPU_OPS_CHECK(static_cast<int64_t>(a.seqKv.size()) == r.batch, a.op, ": actual_seq_lengths_kv has ",
                  a.seqKv.size(), " values for batch ", r.batch);
    const Tensor lengths = at::tensor(a.seqKv, query.options().dtype(at::kLong).device(at::kCPU)).to(query.device());
    const Tensor beyond = at::arange(r.skv, boolOptions.dtype(at::kLong)).view({1, 1, 1, r.skv}) >=
                          lengths.view({r.batch, 1, 1, 1});
    masked = masked.defined() ? masked.logical_or(beyond) : beyond;
  }
  p.masked = masked;
  AttentionOutputs o = attentionForward(p);
  Tensor out = o.out;
  if (!a.seqQ.empty()) {
    NPU_OPS_CHECK(static_cast<int64_t>(a.seqQ.size()) == r.batch, a.op, ": actual_seq_lengths has ", a.seqQ.size(),
                  " values for batch ", r.batch);
    const Tensor lengths = at::tensor(a.seqQ, query.options().dtype(at::kLong).device(at::kCPU)).to(query.device());
    const Tensor rowValid = at::arange(r.sq, query.options().dtype(at::kLong)).view({1, 1, r.sq, 1}) <
                            lengths.view({r.batch, 1, 1, 1});
    out = out * rowValid.to(at::kFloat);
  }
  r.out = fromBnsd(out.to(query.scalar_type()), layout.output);
  r.lse = (o.rowMax + at::log(o.rowSum)).unsqueeze(-1);
  return r;
}

void chargeInfer(const char* op, const Tensor& query, const Tensor& key, const Tensor& value, const InferResult& r,
                 int64_t heads) {
  perf::FusedKernelWork work;
  if (!perf::fusedCubePrecision(perfDtype(query.scalar_type()), work.precision, work.operandBytes)) {
    work.precision = perf::CubePrecision::kFloat32, work.operandBytes = 4;
  }
  work.addGemm(perf::GemmShape{r.batch * heads, r.sq, r.skv, r.headDim});
  work.addGemm(perf::GemmShape{r.batch * heads, r.sq, r.valueDim, r.skv});
  work.cubeFraction = r.fraction;
  work.vectorElements = double(r.batch * heads) * double(r.sq) * double(r.skv) * r.fraction;
  work.opsPerElement = perf::calibration::kFlashOpsPerScore;
  work.hbmBytes = bytesOf(query) + bytesOf(key) + bytesOf(value) + bytesOf(r.out);
  chargeFusedKernel(query.device().index(), op, perf::OperatorKind::kAttention, work);
}

void requireUnquantised(const char* op, std::initializer_list<const OptionalTensor*> tensors) {
  for (const OptionalTensor* t : tensors) {
    TORCH_CHECK(!t->has_value(), op,
                ": quantised, paged, shared-prefix and rope inputs are not supported by npusim (contiguous fp16, "
                "bf16 or fp32 key/value only).",
                notSupported());
  }
}

std::vector<int64_t> lengthsOf(at::OptionalIntArrayRef lengths) {
  return lengths.has_value() ? lengths->vec() : std::vector<int64_t>{};
}
std::vector<int64_t> lengthsOf(at::OptionalSymIntArrayRef lengths) {
  if (!lengths.has_value()) return {};
  return C10_AS_INTARRAYREF_SLOW(*lengths).vec();
}

// ------------------------------------------------------------ prompt flash attention

Tensor promptFlashAttentionImpl(const Tensor& query, const Tensor& key, const Tensor& value,
                                const OptionalTensor& paddingMask, const OptionalTensor& attenMask,
                                const OptionalTensor& pseShift, at::OptionalIntArrayRef actualSeqLengths,
                                const OptionalTensor& deqScale1, const OptionalTensor& quantScale1,
                                const OptionalTensor& deqScale2, const OptionalTensor& quantScale2,
                                const OptionalTensor& quantOffset2, int64_t numHeads, double scaleValue,
                                int64_t preTokens, int64_t nextTokens, c10::string_view inputLayout,
                                int64_t numKeyValueHeads, at::OptionalIntArrayRef actualSeqLengthsKv,
                                int64_t sparseMode, bool onDevice) {
  const char* op = "npu_prompt_flash_attention";
  requireUnquantised(op, {&paddingMask, &deqScale1, &quantScale1, &deqScale2, &quantScale2, &quantOffset2});
  InferArguments a;
  a.op = op, a.heads = numHeads, a.kvHeads = numKeyValueHeads, a.scale = scaleValue;
  a.pre = preTokens, a.next = nextTokens, a.sparseMode = sparseMode;
  a.seqQ = lengthsOf(actualSeqLengths), a.seqKv = lengthsOf(actualSeqLengthsKv);
  a.highPerformance = true;
  const InferLayout layout = parseInferLayout(inputLayout, op);
  if (!onDevice) return inferAttention(query, key, value, pseShift, attenMask, layout, a).out;
  requireChip(op, {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P});
  requireNpuTensors({&query, &key, &value});
  requireNpuTensor(attenMask);
  requireNpuTensor(pseShift);
  const InferResult r = inferAttention(hostOperand(query), hostOperand(key), hostOperand(value), hostOperand(pseShift),
                                       hostOperand(attenMask), layout, a);
  chargeInfer("npu::npu_prompt_flash_attention", query, key, value, r, numHeads);
  return deviceResult(r.out, query.device().index());
}

#define NPUSIM_PFA_PARAMS                                                                                        \
  const Tensor &query, const Tensor &key, const Tensor &value, const OptionalTensor &paddingMask,                \
      const OptionalTensor &attenMask, const OptionalTensor &pseShift, at::OptionalIntArrayRef actualSeqLengths, \
      const OptionalTensor &deqScale1, const OptionalTensor &quantScale1, const OptionalTensor &deqScale2,        \
      const OptionalTensor &quantScale2, const OptionalTensor &quantOffset2, int64_t numHeads, double scaleValue, \
      int64_t preTokens, int64_t nextTokens, c10::string_view inputLayout, int64_t numKeyValueHeads,             \
      at::OptionalIntArrayRef actualSeqLengthsKv, int64_t sparseMode
#define NPUSIM_PFA_ARGS                                                                                          \
  query, key, value, paddingMask, attenMask, pseShift, actualSeqLengths, deqScale1, quantScale1, deqScale2,       \
      quantScale2, quantOffset2, numHeads, scaleValue, preTokens, nextTokens, inputLayout, numKeyValueHeads,      \
      actualSeqLengthsKv, sparseMode

Tensor promptFlashAttentionNpu(NPUSIM_PFA_PARAMS) { return promptFlashAttentionImpl(NPUSIM_PFA_ARGS, true); }
Tensor promptFlashAttentionMeta(NPUSIM_PFA_PARAMS) { return promptFlashAttentionImpl(NPUSIM_PFA_ARGS, false); }

// ------------------------------------------------------------ incremental flash attention

#define NPUSIM_IFA_PARAMS                                                                                          \
  const Tensor &query, const Tensor &key, const Tensor &value, const OptionalTensor &paddingMask,                  \
      const OptionalTensor &attenMask, const OptionalTensor &pseShift, at::OptionalSymIntArrayRef actualSeqLengths, \
      const OptionalTensor &antiquantScale, const OptionalTensor &antiquantOffset, const OptionalTensor &blockTable, \
      const OptionalTensor &dequantScale1, const OptionalTensor &quantScale1, const OptionalTensor &dequantScale2,  \
      const OptionalTensor &quantScale2, const OptionalTensor &quantOffset2, const OptionalTensor &kvPaddingSize,   \
      int64_t numHeads, double scaleValue, c10::string_view inputLayout, int64_t numKeyValueHeads,                 \
      int64_t blockSize, int64_t innerPrecise

Tensor increFlashAttentionImpl(NPUSIM_IFA_PARAMS, bool onDevice) {
  const char* op = "npu_incre_flash_attention";
  requireUnquantised(op, {&paddingMask, &antiquantScale, &antiquantOffset, &blockTable, &dequantScale1, &quantScale1,
                          &dequantScale2, &quantScale2, &quantOffset2, &kvPaddingSize});
  InferArguments a;
  a.op = op, a.heads = numHeads, a.kvHeads = numKeyValueHeads, a.scale = scaleValue;
  a.pre = std::numeric_limits<int32_t>::max(), a.next = std::numeric_limits<int32_t>::max();
  // IFA's actual_seq_lengths are the valid key lengths of each batch.
  a.seqKv = lengthsOf(actualSeqLengths);
  const InferLayout layout = parseInferLayout(inputLayout, op);
  if (!onDevice) return inferAttention(query, key, value, pseShift, attenMask, layout, a).out;
  requireChip(op, {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend310P});
  requireNpuTensors({&query, &key, &value});
  requireNpuTensor(attenMask);
  const InferResult r = inferAttention(hostOperand(query), hostOperand(key), hostOperand(value), hostOperand(pseShift),
                                       hostOperand(attenMask), layout, a);
  chargeInfer("npu::npu_incre_flash_attention", query, key, value, r, numHeads);
  return deviceResult(r.out, query.device().index());
}

#define NPUSIM_IFA_ARGS                                                                                           \
  query, key, value, paddingMask, attenMask, pseShift, actualSeqLengths, antiquantScale, antiquantOffset,          \
      blockTable, dequantScale1, quantScale1, dequantScale2, quantScale2, quantOffset2, kvPaddingSize, numHeads,   \
      scaleValue, inputLayout, numKeyValueHeads, blockSize, innerPrecise

Tensor increFlashAttentionNpu(NPUSIM_IFA_PARAMS) { return increFlashAttentionImpl(NPUSIM_IFA_ARGS, true); }
Tensor increFlashAttentionMeta(NPUSIM_IFA_PARAMS) { return increFlashAttentionImpl(NPUSIM_IFA_ARGS, false); }

// ------------------------------------------------------------ fused infer attention score

#define NPUSIM_FIA_PARAMS                                                                                            \
  const Tensor &query, const Tensor &key, const Tensor &value, const OptionalTensor &pseShift,                       \
      const OptionalTensor &attenMask, at::OptionalSymIntArrayRef actualSeqLengths,                                   \
      at::OptionalSymIntArrayRef actualSeqLengthsKv, const OptionalTensor &dequantScale1,                             \
      const OptionalTensor &quantScale1, const OptionalTensor &dequantScale2, const OptionalTensor &quantScale2,      \
      const OptionalTensor &quantOffset2, const OptionalTensor &antiquantScale, const OptionalTensor &antiquantOffset, \
      const OptionalTensor &keyAntiquantScale, const OptionalTensor &keyAntiquantOffset,                              \
      const OptionalTensor &valueAntiquantScale, const OptionalTensor &valueAntiquantOffset,                          \
      const OptionalTensor &blockTable, const OptionalTensor &queryPaddingSize, const OptionalTensor &kvPaddingSize,  \
      const OptionalTensor &keySharedPrefix, const OptionalTensor &valueSharedPrefix,                                 \
      at::OptionalSymIntArrayRef actualSharedPrefixLen, const OptionalTensor &queryRope,                              \
      const OptionalTensor &keyRope, const OptionalTensor &keyRopeAntiquantScale, int64_t numHeads, double scale,     \
      int64_t preTokens, int64_t nextTokens, c10::string_view inputLayout, int64_t numKeyValueHeads,                 \
      int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, int64_t keyAntiquantMode,  \
      int64_t valueAntiquantMode, bool softmaxLseFlag

std::tuple<Tensor, Tensor> fusedInferAttentionImpl(NPUSIM_FIA_PARAMS, bool onDevice) {
  const char* op = "npu_fused_infer_attention_score";
  requireUnquantised(op, {&dequantScale1, &quantScale1, &dequantScale2, &quantScale2, &quantOffset2, &antiquantScale,
                          &antiquantOffset, &keyAntiquantScale, &keyAntiquantOffset, &valueAntiquantScale,
                          &valueAntiquantOffset, &blockTable, &queryPaddingSize, &kvPaddingSize, &keySharedPrefix,
                          &valueSharedPrefix, &queryRope, &keyRope, &keyRopeAntiquantScale});
  InferArguments a;
  a.op = op, a.heads = numHeads, a.kvHeads = numKeyValueHeads, a.scale = scale;
  a.pre = preTokens, a.next = nextTokens, a.sparseMode = sparseMode;
  a.seqQ = lengthsOf(actualSeqLengths), a.seqKv = lengthsOf(actualSeqLengthsKv);
  const InferLayout layout = parseInferLayout(inputLayout, op);
  auto finish = [&](const InferResult& r, const Tensor& like) -> std::tuple<Tensor, Tensor> {
    Tensor lse = softmaxLseFlag ? r.lse : at::zeros({1}, like.options().dtype(at::kFloat));
    return {r.out, lse};
  };
  if (!onDevice) return finish(inferAttention(query, key, value, pseShift, attenMask, layout, a), query);
  requireChip(op, {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&query, &key, &value});
  requireNpuTensor(attenMask);
  requireNpuTensor(pseShift);
  const Tensor hostQuery = hostOperand(query);
  const InferResult r = inferAttention(hostQuery, hostOperand(key), hostOperand(value), hostOperand(pseShift),
                                       hostOperand(attenMask), layout, a);
  chargeInfer("npu::npu_fused_infer_attention_score", query, key, value, r, numHeads);
  auto [out, lse] = finish(r, hostQuery);
  const int device = query.device().index();
  return {deviceResult(out, device), deviceResult(lse, device)};
}

#define NPUSIM_FIA_ARGS                                                                                              \
  query, key, value, pseShift, attenMask, actualSeqLengths, actualSeqLengthsKv, dequantScale1, quantScale1,          \
      dequantScale2, quantScale2, quantOffset2, antiquantScale, antiquantOffset, keyAntiquantScale,                  \
      keyAntiquantOffset, valueAntiquantScale, valueAntiquantOffset, blockTable, queryPaddingSize, kvPaddingSize,     \
      keySharedPrefix, valueSharedPrefix, actualSharedPrefixLen, queryRope, keyRope, keyRopeAntiquantScale,           \
      numHeads, scale, preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode, innerPrecise, blockSize,    \
      antiquantMode, keyAntiquantMode, valueAntiquantMode, softmaxLseFlag

std::tuple<Tensor, Tensor> fusedInferAttentionNpu(NPUSIM_FIA_PARAMS) {
  return fusedInferAttentionImpl(NPUSIM_FIA_ARGS, true);
}
std::tuple<Tensor, Tensor> fusedInferAttentionMeta(NPUSIM_FIA_PARAMS) {
  return fusedInferAttentionImpl(NPUSIM_FIA_ARGS, false);
}

// ------------------------------------------------------------ fused infer attention: out=, workspace, v2
//
// The out= forms, the workspace and output allocators and the v2 form (renamed arguments)
// share the arguments of the functional form, read by name from the boxed call.

// The argument names of the two generations of the operator.
struct FusedInferNames {
  const char* op;
  const char* heads;
  const char* scale;
  const char* seqQ;
  const char* seqKv;
  const char* lseFlag;
  std::vector<const char*> unsupported;  // quantised, paged, shared-prefix and rope inputs
};

const FusedInferNames& namesOf(bool v2) {
  static const FusedInferNames v1Names{
      "npu_fused_infer_attention_score", "num_heads", "scale", "actual_seq_lengths", "actual_seq_lengths_kv",
      "softmax_lse_flag",
      {"dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2", "antiquant_scale",
       "antiquant_offset", "key_antiquant_scale", "key_antiquant_offset", "value_antiquant_scale",
       "value_antiquant_offset", "block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix",
       "value_shared_prefix", "actual_shared_prefix_len", "query_rope", "key_rope", "key_rope_antiquant_scale"}};
  static const FusedInferNames v2Names{
      "npu_fused_infer_attention_score_v2", "num_query_heads", "softmax_scale", "actual_seq_qlen", "actual_seq_kvlen",
      "return_softmax_lse",
      {"query_rope", "key_rope", "block_table", "dequant_scale_query", "dequant_scale_key", "dequant_offset_key",
       "dequant_scale_value", "dequant_offset_value", "dequant_scale_key_rope", "quant_scale_out", "quant_offset_out",
       "learnable_sink", "query_dtype", "key_dtype", "value_dtype", "query_rope_dtype", "key_rope_dtype",
       "key_shared_prefix_dtype", "value_shared_prefix_dtype", "dequant_scale_query_dtype", "dequant_scale_key_dtype",
       "dequant_scale_value_dtype", "dequant_scale_key_rope_dtype", "out_dtype"}};
  return v2 ? v2Names : v1Names;
}

void requireSupportedInputs(const BoxedArguments& args, const FusedInferNames& names) {
  for (const char* name : names.unsupported) {
    TORCH_CHECK(!args.present(name), names.op, ": ", name,
                " is not supported by npusim (quantised, paged, shared-prefix and rope inputs and explicit dtypes are "
                "not simulated; contiguous fp16, bf16 or fp32 key/value only).",
                notSupported());
  }
}

InferArguments inferArgumentsOf(const BoxedArguments& args, const FusedInferNames& names) {
  InferArguments a;
  a.op = names.op;
  a.heads = args.integer(names.heads), a.kvHeads = args.integer("num_key_value_heads");
  a.scale = args.real(names.scale);
  a.pre = args.integer("pre_tokens"), a.next = args.integer("next_tokens"), a.sparseMode = args.integer("sparse_mode");
  a.seqQ = args.integers(names.seqQ), a.seqKv = args.integers(names.seqKv);
  return a;
}

// The attention output's shape for `layout` (output side), from the query and the value.
std::vector<int64_t> attentionOutShape(const Tensor& query, const Tensor& value, c10::string_view layoutText,
                                       int64_t heads, int64_t kvHeads, const char* op) {
  const InferLayout layout = parseInferLayout(layoutText, op);
  NPU_OPS_CHECK_VALUE(heads > 0, "numHeads should be greater than 0, but got ", heads);
  const int64_t kv = kvHeads == 0 ? heads : kvHeads;
  const int64_t rank = layout.input == AttentionLayout::kBSH ? 3 : 4;
  NPU_OPS_CHECK(query.dim() == rank && value.dim() == rank, op, ": query and value must be ", rank,
                "-dimensional for this layout, but got ", query.dim(), " and ", value.dim());
  int64_t batch = query.size(0), sq = 0, valueDim = 0;
  switch (layout.input) {
    case AttentionLayout::kBSH: sq = query.size(1), valueDim = value.size(2) / kv; break;
    case AttentionLayout::kBSND: sq = query.size(1), valueDim = value.size(3); break;
    default: sq = query.size(2), valueDim = value.size(3); break;  // BNSD
  }
  switch (layout.output) {
    case AttentionLayout::kBSH: return {batch, sq, heads * valueDim};
    case AttentionLayout::kBSND: return {batch, sq, heads, valueDim};
    default: return {batch, heads, sq, valueDim};
  }
}

std::vector<int64_t> lseShape(const Tensor& query, c10::string_view layoutText, int64_t heads, bool lseFlag,
                              const char* op) {
  if (!lseFlag) return {1};
  const InferLayout layout = parseInferLayout(layoutText, op);
  const int64_t sq = layout.input == AttentionLayout::kBNSD ? query.size(2) : query.size(1);
  return {query.size(0), heads, sq, 1};
}

// npusim's workspace of the kernel: CANN's 16 MiB system workspace and the partial results of
// a split over the keys (flash decoding: up to kKvSplits pieces per query row, each with its
// Dv outputs, its row maximum and its row sum in fp32). It does not depend on the valid
// lengths, so the largest workspace any lengths need is this one.
constexpr int64_t kSystemWorkspaceBytes = 16 << 20;
constexpr int64_t kKvSplits = 64;

int64_t workspaceBytes(const Tensor& query, const Tensor& value, c10::string_view layoutText, int64_t heads,
                       int64_t kvHeads, const char* op) {
  const auto out = attentionOutShape(query, value, layoutText, heads, kvHeads, op);
  int64_t rows = 1;
  for (int64_t d : out) rows *= d;
  const InferLayout layout = parseInferLayout(layoutText, op);
  const int64_t valueDim = layout.output == AttentionLayout::kBSH ? out[2] / heads : out.back();
  rows /= std::max<int64_t>(valueDim, 1);
  return kSystemWorkspaceBytes + rows * kKvSplits * (valueDim + 2) * 4;
}

// The math of one call: the host results (out in the query's dtype, lse in fp32 as the
// functional form returns it), charged on the device when `onDevice`.
std::pair<Tensor, Tensor> fusedInferResults(const BoxedArguments& args, const FusedInferNames& names, bool onDevice) {
  requireSupportedInputs(args, names);
  const InferArguments a = inferArgumentsOf(args, names);
  const Tensor query = args.tensor("query"), key = args.tensor("key"), value = args.tensor("value");
  const OptionalTensor pse = args.optionalTensor("pse_shift"), mask = args.optionalTensor("atten_mask");
  const std::string layoutText = args.text("input_layout");
  const InferLayout layout = parseInferLayout(layoutText, names.op);
  const bool lseFlag = args.boolean(names.lseFlag);
  auto finish = [&](const InferResult& r, const Tensor& like) -> std::pair<Tensor, Tensor> {
    return {r.out, lseFlag ? r.lse : at::zeros({1}, like.options().dtype(at::kFloat))};
  };
  if (!onDevice) return finish(inferAttention(query, key, value, pse, mask, layout, a), query);
  requireChip(names.op, {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&query, &key, &value});
  requireNpuTensor(mask);
  requireNpuTensor(pse);
  const Tensor hostQuery = hostOperand(query);
  const InferResult r =
      inferAttention(hostQuery, hostOperand(key), hostOperand(value), hostOperand(pse), hostOperand(mask), layout, a);
  chargeInfer(names.op == std::string("npu_fused_infer_attention_score") ? "npu::npu_fused_infer_attention_score"
                                                                         : "npu::npu_fused_infer_attention_score_v2",
              query, key, value, r, a.heads);
  return finish(r, hostQuery);
}

template <bool kV2, bool kOnDevice>
void fusedInferDefaultBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  BoxedArguments args(op, stack);
  auto [out, lse] = fusedInferResults(args, namesOf(kV2), kOnDevice);
  if (kOnDevice) {
    const int device = args.tensor("query").device().index();
    out = deviceResult(out, device), lse = deviceResult(lse, device);
  }
  args.finish({std::move(out), std::move(lse)});
}

template <bool kV2, bool kOnDevice>
void fusedInferOutBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  BoxedArguments args(op, stack);
  const FusedInferNames& names = namesOf(kV2);
  const std::vector<Tensor> outs = args.tensors("out");
  NPU_OPS_CHECK(outs.size() == 2, names.op, ".out: out must hold [attention_out, softmax_lse], but has ", outs.size(),
                " tensors");
  const Tensor query = args.tensor("query"), value = args.tensor("value");
  const std::string layoutText = args.text("input_layout");
  const int64_t heads = args.integer(names.heads), kvHeads = args.integer("num_key_value_heads");
  const auto outShape = attentionOutShape(query, value, layoutText, heads, kvHeads, names.op);
  NPU_OPS_CHECK(outs[0].sizes().vec() == outShape, names.op, ".out: attention_out has shape ", outs[0].sizes(),
                ", the operator writes ", c10::IntArrayRef(outShape));
  const bool lseFlag = args.boolean(names.lseFlag);
  const auto lse = lseShape(query, layoutText, heads, lseFlag, names.op);
  int64_t lseNumel = 1;
  for (int64_t d : lse) lseNumel *= d;
  NPU_OPS_CHECK(outs[1].numel() >= lseNumel, names.op, ".out: softmax_lse has ", outs[1].numel(),
                " elements, the operator writes ", lseNumel);
  if (const OptionalTensor workspace = args.optionalTensor("workspace"); workspace.has_value()) {
    const int64_t needed = workspaceBytes(query, value, layoutText, heads, kvHeads, names.op);
    const int64_t given = workspace->numel() * static_cast<int64_t>(workspace->element_size());
    NPU_OPS_CHECK(given >= needed, names.op, ".out: the workspace has ", given, " bytes, the kernel needs ", needed,
                  " (allocate it with _", names.op, "_get_max_workspace)");
  }
  auto [out, lseValues] = fusedInferResults(args, names, kOnDevice);
  if (kOnDevice) {
    // The kernel writes the caller's memory (host aliases of it: no copy is charged).
    hostOperand(outs[0]).copy_(out);
    hostOperand(outs[1]).reshape({-1}).narrow(0, 0, lseNumel).copy_(lseValues.reshape({-1}));
  }
  args.finish({c10::IValue(outs)});
}

template <bool kV2, bool kOnDevice>
void fusedInferWorkspaceBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  BoxedArguments args(op, stack);
  const FusedInferNames& names = namesOf(kV2);
  const Tensor query = args.tensor("query");
  const int64_t bytes = workspaceBytes(query, args.tensor("value"), args.text("input_layout"),
                                       args.integer(names.heads), args.integer("num_key_value_heads"), names.op);
  args.finish({at::empty({bytes}, query.options().dtype(at::kByte))});
}

template <bool kV2>
void fusedInferOutputBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  BoxedArguments args(op, stack);
  const FusedInferNames& names = namesOf(kV2);
  for (const char* name : {"quant_scale2", "quant_scale_out", "block_table", "query_rope", "query_dtype",
                           "value_dtype", "out_dtype"}) {
    TORCH_CHECK(!args.present(name), names.op, ": ", name, " is not supported by npusim.", notSupported());
  }
  const Tensor query = args.tensor("query"), value = args.tensor("value");
  const std::string layoutText = args.text("input_layout");
  const int64_t heads = args.integer(names.heads);
  const auto outShape = attentionOutShape(query, value, layoutText, heads, args.integer("num_key_value_heads"),
                                          names.op);
  const auto lse = lseShape(query, layoutText, heads, args.boolean(names.lseFlag), names.op);
  args.finish({at::empty(outShape, query.options()), at::empty(lse, query.options().dtype(at::kFloat))});
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_fused_infer_attention_score.out",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutBoxed<false, true>>());
  m.impl("_npu_fused_infer_attention_score_get_max_workspace",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferWorkspaceBoxed<false, true>>());
  m.impl("_npu_fused_infer_attention_score_infer_output",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutputBoxed<false>>());
  m.impl("npu_fused_infer_attention_score_v2",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferDefaultBoxed<true, true>>());
  m.impl("npu_fused_infer_attention_score_v2.out",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutBoxed<true, true>>());
  m.impl("_npu_fused_infer_attention_score_v2_get_max_workspace",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferWorkspaceBoxed<true, true>>());
  m.impl("_npu_fused_infer_attention_score_v2_infer_output",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutputBoxed<true>>());
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_fused_infer_attention_score.out",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutBoxed<false, false>>());
  m.impl("_npu_fused_infer_attention_score_get_max_workspace",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferWorkspaceBoxed<false, false>>());
  m.impl("_npu_fused_infer_attention_score_infer_output",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutputBoxed<false>>());
  m.impl("npu_fused_infer_attention_score_v2",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferDefaultBoxed<true, false>>());
  m.impl("npu_fused_infer_attention_score_v2.out",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutBoxed<true, false>>());
  m.impl("_npu_fused_infer_attention_score_v2_get_max_workspace",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferWorkspaceBoxed<true, false>>());
  m.impl("_npu_fused_infer_attention_score_v2_infer_output",
         torch::CppFunction::makeFromBoxedFunction<&fusedInferOutputBoxed<true>>());
}

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_prompt_flash_attention", TORCH_FN(promptFlashAttentionNpu));
  m.impl("npu_incre_flash_attention", TORCH_FN(increFlashAttentionNpu));
  m.impl("npu_fused_infer_attention_score", TORCH_FN(fusedInferAttentionNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_prompt_flash_attention", TORCH_FN(promptFlashAttentionMeta));
  m.impl("npu_incre_flash_attention", TORCH_FN(increFlashAttentionMeta));
  m.impl("npu_fused_infer_attention_score", TORCH_FN(fusedInferAttentionMeta));
}

}  // namespace npusim::ops

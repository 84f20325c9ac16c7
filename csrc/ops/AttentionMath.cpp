#include "ops/AttentionMath.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>

#include "ops/KernelSupport.h"
#include "perf/AttentionSparsity.h"
#include "perf/Calibration.h"

namespace npusim::ops {

AttentionLayout parseFusionAttentionLayout(const std::string& layout) {
  NPU_OPS_CHECK(!layout.empty(), "input_layout is empty");
  std::string upper = layout;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "BSH") return AttentionLayout::kBSH;
  if (upper == "SBH") return AttentionLayout::kSBH;
  if (upper == "BSND") return AttentionLayout::kBSND;
  if (upper == "BNSD") return AttentionLayout::kBNSD;
  if (upper == "TND") return AttentionLayout::kTND;
  NPU_OPS_CHECK(false, "The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got ", layout);
  return AttentionLayout::kBNSD;
}

namespace {

// GQA: query head n reads key/value head n / (N / Nkv).
at::Tensor expandHeads(const at::Tensor& t, int64_t heads) {
  const int64_t kvHeads = t.size(1);
  return kvHeads == heads ? t : t.repeat_interleave(heads / kvHeads, 1);
}

at::Tensor foldHeads(const at::Tensor& t, int64_t kvHeads) {
  const int64_t heads = t.size(1);
  if (kvHeads == heads) return t;
  return t.view({t.size(0), kvHeads, heads / kvHeads, t.size(2), t.size(3)}).sum(2);
}

// Scaled, biased and masked logits in fp32.
at::Tensor logits(const AttentionProblem& p, const at::Tensor& qf, const at::Tensor& kf) {
  at::Tensor s = at::matmul(qf, kf.transpose(-2, -1));
  if (p.halfScores) s = s.to(at::kHalf).to(at::kFloat);
  if (p.pse.defined()) {
    s = p.pseInsideScale ? (s + p.pse.to(at::kFloat)) * p.scale : s * p.scale + p.pse.to(at::kFloat);
  } else {
    s = s * p.scale;
  }
  if (p.masked.defined()) s = s.masked_fill(p.masked, -std::numeric_limits<float>::infinity());
  if (p.causal) {
    const int64_t sq = s.size(-2), skv = s.size(-1);
    s = s.masked_fill(at::ones({sq, skv}, s.options().dtype(at::kBool)).triu(1),
                      -std::numeric_limits<float>::infinity());
  }
  return s;
}

// The common case (no pse, no dropout, no mask or a top-left causal one, equal
// head dims) runs PyTorch's CPU flash-attention kernel: tiled, no score matrix
// in memory, as the chip's kernel. The row max it does not return comes from
// one extra pass of Q K^T over blocks of query rows.
bool flashEligible(const AttentionProblem& p) {
  const auto dtype = p.q.scalar_type();
  return !p.q.is_meta() && !p.halfScores && !p.pse.defined() && !p.keep.defined() && !p.masked.defined() &&
         (dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16) && p.q.size(-1) == p.v.size(-1) &&
         (!p.causal || p.q.size(2) <= p.k.size(2));
}

at::Tensor blockedRowMax(const AttentionProblem& p, const at::Tensor& k) {
  const int64_t sq = p.q.size(2), skv = k.size(2);
  const int64_t rowsPerBlock =
      std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, p.q.size(0) * p.q.size(1) * skv));
  // Scaling the query instead of the scores, and contiguous operands, keep
  // each block to one batched GEMM and one reduction.
  const at::Tensor scaled = (p.q.to(at::kFloat) * p.scale).contiguous();
  const at::Tensor kt = k.to(at::kFloat).transpose(-2, -1).contiguous();
  std::vector<at::Tensor> blocks;
  for (int64_t row = 0; row < sq; row += rowsPerBlock) {
    const int64_t end = std::min(sq, row + rowsPerBlock);
    at::Tensor s = at::matmul(scaled.slice(2, row, end), kt);
    if (p.causal) {
      const at::Tensor i = at::arange(row, end, s.options().dtype(at::kLong)).unsqueeze(1);
      const at::Tensor j = at::arange(skv, s.options().dtype(at::kLong)).unsqueeze(0);
      s.masked_fill_(j > i, -std::numeric_limits<float>::infinity());
    }
    blocks.push_back(s.amax(-1));
  }
  return at::cat(blocks, -1);
}

// A fully masked row has max -inf; exp against 0 keeps it at 0 instead of NaN.
at::Tensor finiteMax(const at::Tensor& rowMax) {
  return at::where(at::isinf(rowMax), at::zeros_like(rowMax), rowMax);
}

at::Tensor probabilities(const at::Tensor& s, const at::Tensor& rowMax, const at::Tensor& rowSum) {
  at::Tensor e = at::exp(s - finiteMax(rowMax).unsqueeze(-1));
  const at::Tensor denom = rowSum.unsqueeze(-1);
  return at::where(denom > 0, e / denom, at::zeros_like(e));
}

}  // namespace

AttentionOutputs attentionForward(const AttentionProblem& p) {
  const int64_t heads = p.q.size(1);
  if (flashEligible(p)) {
    const at::Tensor k = expandHeads(p.k, heads), v = expandHeads(p.v, heads);
    auto [out, logSumExp] =
        at::_scaled_dot_product_flash_attention_for_cpu(p.q, k, v, 0.0, p.causal, std::nullopt, p.scale);
    AttentionOutputs result;
    result.out = out;
    result.rowMax = blockedRowMax(p, k);
    result.rowSum = at::exp(logSumExp - finiteMax(result.rowMax));
    return result;
  }
  const at::Tensor qf = p.q.to(at::kFloat);
  const at::Tensor kf = expandHeads(p.k, heads).to(at::kFloat);
  const at::Tensor vf = expandHeads(p.v, heads).to(at::kFloat);
  const at::Tensor s = logits(p, qf, kf);
  AttentionOutputs out;
  out.rowMax = std::get<0>(s.max(-1));
  at::Tensor e = at::exp(s - finiteMax(out.rowMax).unsqueeze(-1));
  out.rowSum = e.sum(-1);
  const at::Tensor denom = out.rowSum.unsqueeze(-1);
  at::Tensor probs = at::where(denom > 0, e / denom, at::zeros_like(e));
  if (p.keep.defined()) probs = probs * p.keep.to(at::kFloat) / p.keepProb;
  if (p.halfScores) probs = probs.to(at::kHalf).to(at::kFloat);
  out.out = at::matmul(probs, vf);
  return out;
}

AttentionGrads attentionBackward(const AttentionProblem& p, const at::Tensor& dout, const at::Tensor& out,
                                 at::Tensor rowMax, at::Tensor rowSum) {
  const int64_t heads = p.q.size(1);
  const int64_t kvHeads = p.k.size(1);
  if (flashEligible(p) && out.defined() && rowMax.defined() && rowSum.defined()) {
    const at::Tensor k = expandHeads(p.k, heads), v = expandHeads(p.v, heads);
    const at::Tensor logSumExp = finiteMax(rowMax) + at::log(rowSum);
    const auto dtype = p.q.scalar_type();
    auto [dq, dk, dv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        dout.to(dtype), p.q, k, v, out.to(dtype), logSumExp, 0.0, p.causal, std::nullopt, p.scale);
    AttentionGrads g;
    g.dq = dq;
    g.dk = kvHeads == heads ? dk : foldHeads(dk.to(at::kFloat), kvHeads);
    g.dv = kvHeads == heads ? dv : foldHeads(dv.to(at::kFloat), kvHeads);
    return g;
  }
  const at::Tensor qf = p.q.to(at::kFloat);
  const at::Tensor kf = expandHeads(p.k, heads).to(at::kFloat);
  const at::Tensor vf = expandHeads(p.v, heads).to(at::kFloat);
  const at::Tensor doutF = dout.to(at::kFloat);
  const at::Tensor s = logits(p, qf, kf);
  if (!rowMax.defined() || !rowSum.defined()) {
    rowMax = std::get<0>(s.max(-1));
    rowSum = at::exp(s - finiteMax(rowMax).unsqueeze(-1)).sum(-1);
  }
  const at::Tensor probs = probabilities(s, rowMax, rowSum);
  at::Tensor dropped = probs;
  at::Tensor keepScale;
  if (p.keep.defined()) {
    keepScale = p.keep.to(at::kFloat) / p.keepProb;
    dropped = probs * keepScale;
  }
  AttentionGrads g;
  const at::Tensor dvFull = at::matmul(dropped.transpose(-2, -1), doutF);
  at::Tensor dprobs = at::matmul(doutF, vf.transpose(-2, -1));
  if (keepScale.defined()) dprobs = dprobs * keepScale;
  // D = rowsum(dO * O) = rowsum(P * dP): the forward output stands in for the product.
  const at::Tensor rowDot = out.defined() ? (doutF * out.to(at::kFloat)).sum(-1, true) : (probs * dprobs).sum(-1, true);
  const at::Tensor ds = probs * (dprobs - rowDot);
  const at::Tensor dlogits = ds * p.scale;
  g.dq = at::matmul(dlogits, kf);
  g.dk = foldHeads(at::matmul(dlogits.transpose(-2, -1), qf), kvHeads);
  g.dv = foldHeads(dvFull, kvHeads);
  if (p.pse.defined()) {
    const at::Tensor dpse = p.pseInsideScale ? dlogits : ds;
    g.dpse = at::sum_to(dpse, p.pse.sizes());
  }
  return g;
}

at::Tensor sparseModeMask(int64_t mode, const at::Tensor& given, int64_t sq, int64_t skv, int64_t pre, int64_t next,
                          int64_t prefixLength, const at::TensorOptions& options) {
  const auto indexOptions = options.dtype(at::kLong);
  const at::Tensor i = at::arange(sq, indexOptions).unsqueeze(1);
  const at::Tensor j = at::arange(skv, indexOptions).unsqueeze(0);
  const int64_t shift = skv - sq;  // right-down alignment
  constexpr int64_t kUnbounded = std::numeric_limits<int32_t>::max();
  switch (mode) {
    case 0: {
      // The given mask, narrowed by the band pre/next describe (top-left origin).
      if (pre >= kUnbounded && next >= kUnbounded) return given;
      const at::Tensor band = ((j - i) > next).logical_or((i - j) > pre);
      return given.defined() ? given.logical_or(band) : band;
    }
    case 1:
    case 5: return given;
    case 2: return j > i;
    case 3: return j > i + shift;
    case 4:
    case 7:  // [U] split right-down causal: the band with right-down origin
      return ((j - i) > next + shift).logical_or((i - j) > pre - shift);
    case 6: return (j > i + shift).logical_and(j >= prefixLength);
    case 8:  // [U] split left-up causal: the band with top-left origin
      return ((j - i) > next).logical_or((i - j) > pre);
    default: return given;
  }
}

double attendedFraction(int64_t mode, bool hasMask, int64_t sq, int64_t skv, int64_t pre, int64_t next) {
  if (sq <= 0 || skv <= 0) return 1.0;
  return perf::attentionBlocks(mode, hasMask, sq, skv, pre, next, 0, perf::calibration::kFlashQueryBlock).fraction();
}

at::Tensor dropoutKeepMask(int64_t numel, double keepProb, int64_t seed, int64_t offset,
                           const at::TensorOptions& options) {
  if (options.device().is_meta()) return at::empty({numel}, options.dtype(at::kBool));
  // A CPU generator seeded from (seed, offset) stands in for the chip's Philox
  // stream at that counter: deterministic, reproducible by the grad.
  const uint64_t mixed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(offset) + 1);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(mixed);
  at::Tensor uniform = at::empty({numel}, options.dtype(at::kFloat).device(at::kCPU));
  uniform.uniform_(0.0, 1.0, generator);
  return uniform.lt(keepProb);
}

at::Tensor toBnsd(const at::Tensor& t, AttentionLayout layout, int64_t heads) {
  switch (layout) {
    case AttentionLayout::kBSH: return t.view({t.size(0), t.size(1), heads, t.size(2) / heads}).permute({0, 2, 1, 3});
    case AttentionLayout::kSBH: return t.view({t.size(0), t.size(1), heads, t.size(2) / heads}).permute({1, 2, 0, 3});
    case AttentionLayout::kBSND: return t.permute({0, 2, 1, 3});
    case AttentionLayout::kBNSD: return t;
    case AttentionLayout::kTND: return t.permute({1, 0, 2}).unsqueeze(0);
  }
  return t;
}

at::Tensor fromBnsd(const at::Tensor& t, AttentionLayout layout) {
  const int64_t b = t.size(0), n = t.size(1), s = t.size(2), d = t.size(3);
  switch (layout) {
    // reshape keeps a view where the strides allow one; the kernels' results (and their Meta
    // functions, which torch.compile traces with) are contiguous in the layout.
    case AttentionLayout::kBSH: return t.permute({0, 2, 1, 3}).reshape({b, s, n * d}).contiguous();
    case AttentionLayout::kSBH: return t.permute({2, 0, 1, 3}).reshape({s, b, n * d}).contiguous();
    case AttentionLayout::kBSND: return t.permute({0, 2, 1, 3}).contiguous();
    case AttentionLayout::kBNSD: return t.contiguous();
    case AttentionLayout::kTND: return t.squeeze(0).permute({1, 0, 2}).contiguous();
  }
  return t;
}

}  // namespace npusim::ops

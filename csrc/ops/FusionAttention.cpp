// npu_fusion_attention and npu_fusion_attention_grad (reference §4.1): the
// training FlashAttention of torch_npu in its five layouts, nine sparse modes,
// GQA, pse, dropout, with the 7-tuple (fp32 [B,N,Sq,8] softmax statistics and
// the dropout's seed/offset/numels) the grad consumes. The math runs in fp32
// on the device memory (attention_math); the price is one FlashAttention
// kernel (its two or five GEMMs, the online softmax, each operand read once).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <limits>
#include <mutex>
#include <unordered_map>

#include "backend/device/NpuGenerator.h"
#include "ops/AttentionMath.h"
#include "ops/KernelSupport.h"
#include "perf/AttentionSparsity.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
using OptionalTensor = std::optional<Tensor>;

constexpr int64_t kStatLanes = 8;

struct Geometry {
  AttentionLayout layout = AttentionLayout::kBNSD;
  int64_t batch = 0, heads = 0, kvHeads = 0, sq = 0, skv = 0, headDim = 0, valueDim = 0;
  std::vector<int64_t> qEnds, kvEnds;  // TND: cumulative ends per batch
  int64_t numels = 0;                  // elements of the dropout mask
};

void checkRank(const Tensor& t, const char* name) {
  NPU_OPS_CHECK(t.dim() == 3 || t.dim() == 4, "The shapes of the input ", name,
                " should be 3 or 4 dimensional, but got ", t.dim(), "-dimensional");
}

Geometry geometryOf(const Tensor& q, const Tensor& k, const Tensor& v, int64_t headNum, const std::string& layout,
                    at::OptionalIntArrayRef actualSeqQ, at::OptionalIntArrayRef actualSeqKv, int64_t sparseMode,
                    const std::string& softmaxLayout) {
  NPU_OPS_CHECK(headNum > 0, "head_num must > 0, but got ", headNum);
  checkRank(q, "query");
  checkRank(k, "key");
  checkRank(v, "value");
  Geometry g;
  g.layout = parseFusionAttentionLayout(layout);
  const bool tnd = g.layout == AttentionLayout::kTND;
  NPU_OPS_CHECK(softmaxLayout.empty() || softmaxLayout == "TND", "only supported softmax_layout=TND");
  NPU_OPS_CHECK(softmaxLayout.empty() || tnd, "softmax_layout=TND only supported when input_layout_str=TND");
  if (tnd) {
    NPU_OPS_CHECK(sparseMode >= 0 && sparseMode <= 8 && sparseMode != 5,
                  "The sparse_mode value must be in range of [0,5) or (5,8], but got ", sparseMode);
    NPU_OPS_CHECK(actualSeqQ.has_value() && actualSeqKv.has_value() && !actualSeqQ->empty() &&
                      actualSeqQ->size() == actualSeqKv->size(),
                  "the size of actual_seq_qlen and actual_seq_kvlen must be the same and cannot be empty.");
  } else {
    NPU_OPS_CHECK(sparseMode >= 0 && sparseMode <= 6, "The sparse_mode value must be in range of [0,6], but got ",
                  sparseMode);
  }
  const int64_t rank = tnd || g.layout == AttentionLayout::kBSH || g.layout == AttentionLayout::kSBH ? 3 : 4;
  NPU_OPS_CHECK(q.dim() == rank && k.dim() == rank && v.dim() == rank, "The input_layout ", layout, " needs ", rank,
                "-dimensional query, key and value, but got ", q.dim(), ", ", k.dim(), " and ", v.dim());
  g.heads = headNum;
  switch (g.layout) {
    case AttentionLayout::kBSH:
    case AttentionLayout::kSBH: {
      const bool bsh = g.layout == AttentionLayout::kBSH;
      g.batch = bsh ? q.size(0) : q.size(1);
      g.sq = bsh ? q.size(1) : q.size(0);
      g.skv = bsh ? k.size(1) : k.size(0);
      NPU_OPS_CHECK(q.size(2) % headNum == 0, "The hidden size of query (", q.size(2),
                    ") must be divisible by head_num (", headNum, ")");
      g.headDim = q.size(2) / headNum;
      NPU_OPS_CHECK(g.headDim > 0 && k.size(2) % g.headDim == 0, "The hidden size of key (", k.size(2),
                    ") must be a multiple of the head dim ", g.headDim);
      g.kvHeads = k.size(2) / g.headDim;
      NPU_OPS_CHECK(g.kvHeads > 0 && v.size(2) % g.kvHeads == 0, "The hidden size of value (", v.size(2),
                    ") must be a multiple of the key heads ", g.kvHeads);
      g.valueDim = v.size(2) / g.kvHeads;
      break;
    }
    case AttentionLayout::kBSND:
      g.batch = q.size(0), g.sq = q.size(1), g.skv = k.size(1);
      NPU_OPS_CHECK(q.size(2) == headNum, "head_num (", headNum, ") must equal N of the query (", q.size(2), ")");
      g.kvHeads = k.size(2), g.headDim = q.size(3), g.valueDim = v.size(3);
      break;
    case AttentionLayout::kBNSD:
      g.batch = q.size(0), g.sq = q.size(2), g.skv = k.size(2);
      NPU_OPS_CHECK(q.size(1) == headNum, "head_num (", headNum, ") must equal N of the query (", q.size(1), ")");
      g.kvHeads = k.size(1), g.headDim = q.size(3), g.valueDim = v.size(3);
      break;
    case AttentionLayout::kTND: {
      NPU_OPS_CHECK(q.size(1) == headNum, "head_num (", headNum, ") must equal N of the query (", q.size(1), ")");
      g.kvHeads = k.size(1), g.headDim = q.size(2), g.valueDim = v.size(2);
      g.qEnds.assign(actualSeqQ->begin(), actualSeqQ->end());
      g.kvEnds.assign(actualSeqKv->begin(), actualSeqKv->end());
      // Trailing zeros drop trailing batches.
      while (g.qEnds.size() > 1 && g.qEnds.back() == 0 && g.kvEnds.back() == 0) {
        g.qEnds.pop_back();
        g.kvEnds.pop_back();
      }
      g.batch = static_cast<int64_t>(g.qEnds.size());
      int64_t qPrev = 0, kvPrev = 0;
      for (size_t b = 0; b < g.qEnds.size(); ++b) {
        NPU_OPS_CHECK(g.qEnds[b] >= qPrev && g.kvEnds[b] >= kvPrev,
                      "actual_seq_qlen and actual_seq_kvlen must be non-decreasing cumulative lengths");
        const int64_t sq = g.qEnds[b] - qPrev, skv = g.kvEnds[b] - kvPrev;
        g.sq = std::max(g.sq, sq);
        g.skv = std::max(g.skv, skv);
        g.numels += headNum * sq * skv;
        qPrev = g.qEnds[b], kvPrev = g.kvEnds[b];
      }
      NPU_OPS_CHECK(qPrev <= q.size(0) && kvPrev <= k.size(0), "actual_seq_qlen ends at ", qPrev,
                    " and actual_seq_kvlen at ", kvPrev, ", beyond T of query (", q.size(0), ") or key (", k.size(0),
                    ")");
      break;
    }
  }
  NPU_OPS_CHECK(g.kvHeads > 0 && g.heads % g.kvHeads == 0, "The head number of query (", g.heads,
                ") must be a multiple of the head number of key (", g.kvHeads, ")");
  NPU_OPS_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
                "query, key and value must have the same dtype, but got ", q.scalar_type(), ", ", k.scalar_type(),
                " and ", v.scalar_type());
  NPU_OPS_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kFloat,
                "npu_fusion_attention supports float16, bfloat16 and float32, but got ", q.scalar_type());
  if (!tnd) g.numels = g.batch * g.heads * g.sq * g.skv;
  return g;
}

void checkCommon(double keepProb, const OptionalTensor& paddingMask, const OptionalTensor& sink) {
  NPU_OPS_CHECK(keepProb > 0 && keepProb <= 1, "The keep_prob value must be in range of (0, 1], but got ", keepProb);
  TORCH_CHECK(!paddingMask.has_value(), "npu_fusion_attention: padding_mask is not supported, pass None.",
              notSupported());
  TORCH_CHECK(!sink.has_value(),
              "npu_fusion_attention: the param sink is not supported by npusim (aclnnFlashAttentionScoreV3 is not "
              "simulated).",
              notSupported());
}

Tensor boolMask(const OptionalTensor& mask) {
  if (!mask.has_value()) return Tensor();
  NPU_OPS_CHECK(mask->scalar_type() == at::kBool || mask->scalar_type() == at::kByte,
                "atten_mask must be bool or uint8, but got ", mask->scalar_type());
  return mask->scalar_type() == at::kBool ? *mask : mask->ne(0);
}

// One attention block: all batches (BSH/SBH/BSND/BNSD) or one TND batch.
struct Block {
  int64_t qBegin = 0, qEnd = 0, kvBegin = 0, kvEnd = 0;  // TND rows
  int64_t maskBegin = 0;                                 // TND offset into the flat dropout mask
};

std::vector<Block> blocksOf(const Geometry& g) {
  std::vector<Block> blocks;
  if (g.layout != AttentionLayout::kTND) {
    blocks.push_back(Block{});
    return blocks;
  }
  int64_t qPrev = 0, kvPrev = 0, maskOffset = 0;
  for (size_t b = 0; b < g.qEnds.size(); ++b) {
    Block block{qPrev, g.qEnds[b], kvPrev, g.kvEnds[b], maskOffset};
    maskOffset += g.heads * (block.qEnd - block.qBegin) * (block.kvEnd - block.kvBegin);
    qPrev = g.qEnds[b], kvPrev = g.kvEnds[b];
    blocks.push_back(block);
  }
  return blocks;
}

struct Options {
  double scale = 1;
  double keepProb = 1;
  int64_t pre = 0, next = 0, sparseMode = 0;
  std::vector<int64_t> prefix;
};

// Modes whose mask is "key after query" from the top-left corner: the fast
// causal path of the math needs no mask tensor for them.
bool isTopLeftCausal(int64_t sparseMode, int64_t sq, int64_t skv) {
  return sparseMode == 2 || (sparseMode == 3 && sq == skv);
}

// The problem of one block, in BNSD.
AttentionProblem problemOf(const Geometry& g, const Block& block, const Tensor& q, const Tensor& k, const Tensor& v,
                           const OptionalTensor& pse, const Tensor& mask, const Tensor& keepFlat, const Options& o) {
  AttentionProblem p;
  p.scale = o.scale;
  p.keepProb = o.keepProb;
  p.pseInsideScale = true;
  const auto maskOptions = q.options().dtype(at::kBool);
  if (g.layout == AttentionLayout::kTND) {
    const int64_t sq = block.qEnd - block.qBegin, skv = block.kvEnd - block.kvBegin;
    p.q = toBnsd(q.slice(0, block.qBegin, block.qEnd), g.layout, g.heads);
    p.k = toBnsd(k.slice(0, block.kvBegin, block.kvEnd), g.layout, g.kvHeads);
    p.v = toBnsd(v.slice(0, block.kvBegin, block.kvEnd), g.layout, g.kvHeads);
    Tensor given;
    if (mask.defined()) given = mask.slice(-2, 0, sq).slice(-1, 0, skv);
    if (mask.defined() && isTopLeftCausal(o.sparseMode, sq, skv)) {
      p.causal = true;
    } else if (mask.defined()) {
      p.masked = sparseModeMask(o.sparseMode, given, sq, skv, o.pre, o.next, 0, maskOptions);
    }
    if (keepFlat.defined()) {
      p.keep = keepFlat.slice(0, block.maskBegin, block.maskBegin + g.heads * sq * skv).view({1, g.heads, sq, skv});
    }
    return p;
  }
  p.q = toBnsd(q, g.layout, g.heads);
  p.k = toBnsd(k, g.layout, g.kvHeads);
  p.v = toBnsd(v, g.layout, g.kvHeads);
  if (pse.has_value()) p.pse = *pse;
  if (mask.defined()) {
    if (o.sparseMode == 6) {
      NPU_OPS_CHECK(static_cast<int64_t>(o.prefix.size()) >= g.batch, "sparse_mode 6 needs prefix with ", g.batch,
                    " values, but got ", o.prefix.size());
      std::vector<Tensor> perBatch;
      for (int64_t b = 0; b < g.batch; ++b) {
        perBatch.push_back(sparseModeMask(6, Tensor(), g.sq, g.skv, o.pre, o.next, o.prefix[b], maskOptions));
      }
      p.masked = at::stack(perBatch).unsqueeze(1);
    } else if (isTopLeftCausal(o.sparseMode, g.sq, g.skv)) {
      p.causal = true;
    } else {
      p.masked = sparseModeMask(o.sparseMode, mask, g.sq, g.skv, o.pre, o.next, 0, maskOptions);
    }
  }
  if (keepFlat.defined()) p.keep = keepFlat.view({g.batch, g.heads, g.sq, g.skv});
  return p;
}

// Dropout bookkeeping: torch_npu takes seed and offset from the default
// generator and advances the Philox offset by 10 per call; a new seed
// (manual_seed) starts at offset 0 again.
std::pair<int64_t, int64_t> nextDropoutSeedAndOffset(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, std::pair<uint64_t, uint64_t>> state;
  const uint64_t seed = backend::defaultNpuGenerator(static_cast<c10::DeviceIndex>(device)).current_seed();
  std::lock_guard<std::mutex> lock(mutex);
  auto& [lastSeed, offset] = state[device];
  if (lastSeed != seed) lastSeed = seed, offset = 0;
  const uint64_t current = offset;
  offset += 10;
  return {static_cast<int64_t>(seed), static_cast<int64_t>(current)};
}

// The FlashAttention kernel's work: its GEMMs over the score blocks the
// sparse mode leaves to compute (perf/AttentionSparsity.h, per TND batch), the
// online softmax on those scores, one work item per non-empty query block.
perf::FusedKernelWork attentionWork(const Geometry& g, const Tensor& q, const Options& o, bool hasMask, bool backward,
                                    double hbmBytes) {
  perf::FusedKernelWork work;
  if (!perf::fusedCubePrecision(perfDtype(q.scalar_type()), work.precision, work.operandBytes)) {
    work.precision = perf::CubePrecision::kFloat32, work.operandBytes = 4;
  }
  double computed = 0, full = 0;
  auto addProblem = [&](int64_t heads2d, int64_t sq, int64_t skv, int64_t prefix) {
    if (heads2d <= 0 || sq <= 0 || skv <= 0) return;
    work.addGemm(perf::GemmShape{heads2d, sq, skv, g.headDim});   // S = Q K^T
    work.addGemm(perf::GemmShape{heads2d, sq, g.valueDim, skv});  // O = P V
    if (backward) {
      work.addGemm(perf::GemmShape{heads2d, skv, g.valueDim, sq});  // dV = P^T dO
      work.addGemm(perf::GemmShape{heads2d, sq, g.headDim, skv});   // dQ = dS K
      work.addGemm(perf::GemmShape{heads2d, skv, g.headDim, sq});   // dK = dS^T Q
    }
    const perf::AttentionBlockWork blocks = perf::attentionBlocks(o.sparseMode, hasMask, sq, skv, o.pre, o.next,
                                                                  prefix, perf::calibration::kFlashQueryBlock);
    computed += double(heads2d) * blocks.computedScores;
    full += double(heads2d) * blocks.fullScores;
    work.vectorElements += double(heads2d) * blocks.computedScores;
    work.parallelBlocks += double(heads2d) * double(blocks.queryBlocks);
  };
  const bool prefixMode = hasMask && (o.sparseMode == 5 || o.sparseMode == 6);
  auto prefixOf = [&](int64_t b) {
    return prefixMode && b < static_cast<int64_t>(o.prefix.size()) ? o.prefix[b] : int64_t(0);
  };
  if (g.layout == AttentionLayout::kTND) {
    int64_t qPrev = 0, kvPrev = 0;
    for (size_t b = 0; b < g.qEnds.size(); ++b) {
      addProblem(g.heads, g.qEnds[b] - qPrev, g.kvEnds[b] - kvPrev, prefixOf(static_cast<int64_t>(b)));
      qPrev = g.qEnds[b], kvPrev = g.kvEnds[b];
    }
  } else if (prefixMode) {
    for (int64_t b = 0; b < g.batch; ++b) addProblem(g.heads, g.sq, g.skv, prefixOf(b));
  } else {
    addProblem(g.batch * g.heads, g.sq, g.skv, 0);
  }
  work.cubeFraction = full > 0 ? computed / full : 1.0;
  work.opsPerElement = perf::calibration::kFlashOpsPerScore * (backward ? 2.0 : 1.0);
  work.computeType = perf::DType::kFloat32;
  work.hbmBytes = hbmBytes;
  return work;
}

Tensor statsOut(const Tensor& rows) {
  // The kernel writes each row statistic into 8 lanes; consumers read [..., 0].
  auto sizes = rows.sizes().vec();
  sizes.push_back(kStatLanes);
  return rows.unsqueeze(-1).expand(sizes).contiguous();
}

using ForwardResult = std::tuple<Tensor, Tensor, Tensor, Tensor, int64_t, int64_t, int64_t>;

ForwardResult fusionAttentionHost(const Tensor& q, const Tensor& k, const Tensor& v, const Geometry& g,
                                  const OptionalTensor& pse, const Tensor& mask, const Options& o, int64_t seed,
                                  int64_t offset) {
  const bool dropout = o.keepProb < 1.0;
  Tensor keepFlat;
  if (dropout) keepFlat = dropoutKeepMask(g.numels, o.keepProb, seed, offset, q.options());
  Tensor out, rowMax, rowSum;
  if (g.layout != AttentionLayout::kTND) {
    const AttentionOutputs r = attentionForward(problemOf(g, Block{}, q, k, v, pse, mask, keepFlat, o));
    out = fromBnsd(r.out.to(q.scalar_type()), g.layout);
    rowMax = r.rowMax, rowSum = r.rowSum;  // [B, N, Sq]
  } else {
    std::vector<Tensor> outs, maxes, sums;
    for (const Block& block : blocksOf(g)) {
      if (block.qEnd == block.qBegin) continue;
      const AttentionOutputs r = attentionForward(problemOf(g, block, q, k, v, pse, mask, keepFlat, o));
      outs.push_back(fromBnsd(r.out.to(q.scalar_type()), g.layout));
      maxes.push_back(r.rowMax.squeeze(0).transpose(0, 1));  // [sq, N]
      sums.push_back(r.rowSum.squeeze(0).transpose(0, 1));
    }
    const int64_t tq = q.size(0);
    out = at::zeros({tq, g.heads, g.valueDim}, q.options());
    rowMax = at::zeros({tq, g.heads}, q.options().dtype(at::kFloat));
    rowSum = at::zeros({tq, g.heads}, q.options().dtype(at::kFloat));
    if (!outs.empty()) {
      const int64_t used = g.qEnds.back();
      out.slice(0, 0, used).copy_(at::cat(outs));
      rowMax.slice(0, 0, used).copy_(at::cat(maxes));
      rowSum.slice(0, 0, used).copy_(at::cat(sums));
    }
  }
  const Tensor softmaxOut = at::empty({0}, q.options());
  return {out, statsOut(rowMax), statsOut(rowSum), softmaxOut, dropout ? seed : 0, dropout ? offset : 0, g.numels};
}

Options optionsOf(double scale, double keepProb, int64_t pre, int64_t next, int64_t sparseMode,
                  at::OptionalIntArrayRef prefix) {
  Options o;
  o.scale = scale, o.keepProb = keepProb, o.pre = pre, o.next = next, o.sparseMode = sparseMode;
  if (prefix.has_value()) o.prefix.assign(prefix->begin(), prefix->end());
  return o;
}

// One kernel for both dispatch keys: OnDevice computes on device memory, else
// (Meta) only the output shapes.
template <bool OnDevice>
ForwardResult fusionAttention(const Tensor& query, const Tensor& key, const Tensor& value, int64_t headNum,
                                  c10::string_view inputLayout, const OptionalTensor& pse,
                                  const OptionalTensor& paddingMask, const OptionalTensor& attenMask, double scale,
                                  double keepProb, int64_t preTokens, int64_t nextTokens, int64_t innerPrecise,
                                  at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actualSeqQ,
                                  at::OptionalIntArrayRef actualSeqKv, int64_t sparseMode, bool genMaskParallel,
                                  bool sync, c10::string_view softmaxLayout, const OptionalTensor& sink,
                                  const OptionalTensor& dropoutMask, int64_t seed, int64_t offset) {
  constexpr bool onDevice = OnDevice;
  const Geometry g = geometryOf(query, key, value, headNum, std::string(inputLayout), actualSeqQ, actualSeqKv,
                                sparseMode, std::string(softmaxLayout));
  checkCommon(keepProb, paddingMask, sink);
  TORCH_CHECK(!dropoutMask.has_value(),
              "npu_fusion_attention: an explicit dropout_mask is not supported by npusim (its grad regenerates the "
              "mask from seed and offset with npusim's generator, not the chip's Philox stream).",
              notSupported());
  NPU_OPS_CHECK(!(g.layout == AttentionLayout::kTND && pse.has_value()),
                "npu_fusion_attention: pse with input_layout TND is not supported by npusim.");
  const Options o = optionsOf(scale, keepProb, preTokens, nextTokens, sparseMode, prefix);
  if (!onDevice) {
    return fusionAttentionHost(query, key, value, g, pse, boolMask(attenMask), o, 0, 0);
  }
  requireChip("npu_fusion_attention",
              {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&query, &key, &value});
  requireNpuTensor(pse);
  requireNpuTensor(attenMask);
  requireDtypeOnChip("npu_fusion_attention", query);
  const int device = query.device().index();
  int64_t dropSeed = 0, dropOffset = 0;
  if (keepProb < 1.0) std::tie(dropSeed, dropOffset) = nextDropoutSeedAndOffset(device);
  ForwardResult host = fusionAttentionHost(hostOperand(query), hostOperand(key), hostOperand(value), g,
                                           hostOperand(pse), boolMask(hostOperand(attenMask)), o, dropSeed,
                                           dropOffset);
  const double bytes = bytesOf(query) + bytesOf(key) + bytesOf(value) + bytesOf(pse) + bytesOf(attenMask) +
                       bytesOf(std::get<0>(host)) + bytesOf(std::get<1>(host)) + bytesOf(std::get<2>(host));
  chargeFusedKernel(device, "npu::npu_fusion_attention", perf::OperatorKind::kAttention,
                    attentionWork(g, query, o, attenMask.has_value(), false, bytes));
  return {deviceResult(std::get<0>(host), device), deviceResult(std::get<1>(host), device),
          deviceResult(std::get<2>(host), device), deviceResult(std::get<3>(host), device), std::get<4>(host),
          std::get<5>(host), std::get<6>(host)};
}

// ------------------------------------------------------------------ grad

using GradResult = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>;

Tensor rowsOfStats(const OptionalTensor& stats) {
  if (!stats.has_value() || !stats->defined() || stats->numel() == 0) return Tensor();
  return stats->select(-1, 0).to(at::kFloat);
}

GradResult fusionAttentionGradHost(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dy,
                                   const Geometry& g, const OptionalTensor& pse, const Tensor& mask,
                                   const Tensor& softmaxMax, const Tensor& softmaxSum, const Tensor& attentionIn,
                                   const Options& o, int64_t seed, int64_t offset) {
  Tensor keepFlat;
  if (o.keepProb < 1.0) keepFlat = dropoutKeepMask(g.numels, o.keepProb, seed, offset, q.options());
  Tensor dq, dk, dv, dpse;
  if (g.layout != AttentionLayout::kTND) {
    const AttentionProblem p = problemOf(g, Block{}, q, k, v, pse, mask, keepFlat, o);
    const Tensor out = attentionIn.defined() ? toBnsd(attentionIn, g.layout, g.heads) : Tensor();
    const AttentionGrads r = attentionBackward(p, toBnsd(dy, g.layout, g.heads), out, softmaxMax, softmaxSum);
    dq = fromBnsd(r.dq.to(q.scalar_type()), g.layout);
    dk = fromBnsd(r.dk.to(k.scalar_type()), g.layout);
    dv = fromBnsd(r.dv.to(v.scalar_type()), g.layout);
    if (r.dpse.defined()) dpse = r.dpse.to(pse->scalar_type());
  } else {
    dq = at::zeros_like(q, at::MemoryFormat::Contiguous);
    dk = at::zeros_like(k, at::MemoryFormat::Contiguous);
    dv = at::zeros_like(v, at::MemoryFormat::Contiguous);
    for (const Block& block : blocksOf(g)) {
      if (block.qEnd == block.qBegin || block.kvEnd == block.kvBegin) continue;
      const AttentionProblem p = problemOf(g, block, q, k, v, pse, mask, keepFlat, o);
      auto rows = [&](const Tensor& t) {
        return t.defined() ? t.slice(0, block.qBegin, block.qEnd).transpose(0, 1).unsqueeze(0) : Tensor();
      };
      const Tensor out =
          attentionIn.defined() ? toBnsd(attentionIn.slice(0, block.qBegin, block.qEnd), g.layout, g.heads) : Tensor();
      const AttentionGrads r = attentionBackward(p, toBnsd(dy.slice(0, block.qBegin, block.qEnd), g.layout, g.heads),
                                                 out, rows(softmaxMax), rows(softmaxSum));
      dq.slice(0, block.qBegin, block.qEnd).copy_(fromBnsd(r.dq, g.layout));
      dk.slice(0, block.kvBegin, block.kvEnd).copy_(fromBnsd(r.dk, g.layout));
      dv.slice(0, block.kvBegin, block.kvEnd).copy_(fromBnsd(r.dv, g.layout));
    }
  }
  // dsink: no sink (rejected above), an empty tensor as for an absent pse.
  return {dq, dk, dv, dpse, Tensor()};
}

GradResult fusionAttentionGradImpl(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& dy,
                                   int64_t headNum, c10::string_view inputLayout, const OptionalTensor& pse,
                                   const OptionalTensor& paddingMask, const OptionalTensor& attenMask,
                                   const OptionalTensor& softmaxMax, const OptionalTensor& softmaxSum,
                                   const OptionalTensor& softmaxIn, const OptionalTensor& attentionIn,
                                   double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
                                   int64_t innerPrecise, int64_t seed, int64_t offset, int64_t numels,
                                   at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actualSeqQ,
                                   at::OptionalIntArrayRef actualSeqKv, int64_t sparseMode, bool genMaskParallel,
                                   bool sync, c10::string_view softmaxLayout, const OptionalTensor& sink,
                                   bool onDevice) {
  const Geometry g = geometryOf(query, key, value, headNum, std::string(inputLayout), actualSeqQ, actualSeqKv,
                                sparseMode, std::string(softmaxLayout));
  checkRank(dy, "dy");
  checkCommon(keepProb, paddingMask, sink);
  NPU_OPS_CHECK(!(g.layout == AttentionLayout::kTND && pse.has_value()),
                "npu_fusion_attention_grad: pse with input_layout TND is not supported by npusim.");
  const Options o = optionsOf(scaleValue, keepProb, preTokens, nextTokens, sparseMode, prefix);
  if (!onDevice) {
    return fusionAttentionGradHost(query, key, value, dy, g, pse, boolMask(attenMask), rowsOfStats(softmaxMax),
                                   rowsOfStats(softmaxSum), attentionIn.value_or(Tensor()), o, seed, offset);
  }
  requireChip("npu_fusion_attention_grad", {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3, ChipFamily::kAscend950});
  requireNpuTensors({&query, &key, &value, &dy});
  requireNpuTensor(pse);
  requireNpuTensor(attenMask);
  const int device = query.device().index();
  const OptionalTensor hostAttention = hostOperand(attentionIn);
  GradResult host = fusionAttentionGradHost(
      hostOperand(query), hostOperand(key), hostOperand(value), hostOperand(dy), g, hostOperand(pse),
      boolMask(hostOperand(attenMask)), rowsOfStats(hostOperand(softmaxMax)), rowsOfStats(hostOperand(softmaxSum)),
      hostAttention.value_or(Tensor()), o, seed, offset);
  const double bytes = 2.0 * (bytesOf(query) + bytesOf(key) + bytesOf(value)) + 2.0 * bytesOf(dy) + bytesOf(pse) +
                       bytesOf(attenMask) + bytesOf(softmaxMax) + bytesOf(softmaxSum);
  chargeFusedKernel(device, "npu::npu_fusion_attention_grad", perf::OperatorKind::kAttentionBackward,
                    attentionWork(g, query, o, attenMask.has_value(), true, bytes));
  return {deviceResult(std::get<0>(host), device), deviceResult(std::get<1>(host), device),
          deviceResult(std::get<2>(host), device), deviceResult(std::get<3>(host), device), Tensor()};
}

#define NPUSIM_FA_GRAD_PARAMS                                                                                       \
  const Tensor &query, const Tensor &key, const Tensor &value, const Tensor &dy, int64_t headNum,                  \
      c10::string_view inputLayout, const OptionalTensor &pse, const OptionalTensor &paddingMask,                   \
      const OptionalTensor &attenMask, const OptionalTensor &softmaxMax, const OptionalTensor &softmaxSum,          \
      const OptionalTensor &softmaxIn, const OptionalTensor &attentionIn, double scaleValue, double keepProb,       \
      int64_t preTokens, int64_t nextTokens, int64_t innerPrecise, int64_t seed, int64_t offset, int64_t numels,    \
      at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actualSeqQ, at::OptionalIntArrayRef actualSeqKv,      \
      int64_t sparseMode, bool genMaskParallel, bool sync, c10::string_view softmaxLayout, const OptionalTensor &sink
#define NPUSIM_FA_GRAD_ARGS                                                                                         \
  query, key, value, dy, headNum, inputLayout, pse, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,      \
      attentionIn, scaleValue, keepProb, preTokens, nextTokens, innerPrecise, seed, offset, numels, prefix,         \
      actualSeqQ, actualSeqKv, sparseMode, genMaskParallel, sync, softmaxLayout, sink

GradResult fusionAttentionGradNpu(NPUSIM_FA_GRAD_PARAMS) {
  return fusionAttentionGradImpl(NPUSIM_FA_GRAD_ARGS, true);
}
GradResult fusionAttentionGradMeta(NPUSIM_FA_GRAD_PARAMS) {
  return fusionAttentionGradImpl(NPUSIM_FA_GRAD_ARGS, false);
}

// ------------------------------------------------------------------ autograd

using ForwardSignature = ForwardResult(const Tensor&, const Tensor&, const Tensor&, int64_t, c10::string_view,
                                       const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, double,
                                       double, int64_t, int64_t, int64_t, at::OptionalIntArrayRef,
                                       at::OptionalIntArrayRef, at::OptionalIntArrayRef, int64_t, bool, bool,
                                       c10::string_view, const OptionalTensor&, const OptionalTensor&, int64_t,
                                       int64_t);
using GradSignature = GradResult(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                                 c10::string_view, const OptionalTensor&, const OptionalTensor&, const OptionalTensor&,
                                 const OptionalTensor&, const OptionalTensor&, const OptionalTensor&,
                                 const OptionalTensor&, double, double, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, at::OptionalIntArrayRef, at::OptionalIntArrayRef, at::OptionalIntArrayRef,
                                 int64_t, bool, bool, c10::string_view, const OptionalTensor&);

// The non-differentiable arguments, kept for the backward.
struct SavedArguments {
  int64_t headNum = 0;
  std::string inputLayout;
  OptionalTensor paddingMask, attenMask;
  double scale = 1, keepProb = 1;
  int64_t pre = 0, next = 0, innerPrecise = 0;
  std::optional<std::vector<int64_t>> prefix, actualSeqQ, actualSeqKv;
  int64_t sparseMode = 0;
  bool genMaskParallel = true, sync = false;
  std::string softmaxLayout;
  int64_t seed = 0, offset = 0, numels = 0;
};

std::optional<std::vector<int64_t>> ownedList(at::OptionalIntArrayRef list) {
  if (!list.has_value()) return std::nullopt;
  return list->vec();
}
at::OptionalIntArrayRef viewList(const std::optional<std::vector<int64_t>>& list) {
  if (!list.has_value()) return std::nullopt;
  return at::IntArrayRef(*list);
}

class FusionAttentionFunction : public torch::autograd::Function<FusionAttentionFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& query,
                                                const Tensor& key, const Tensor& value, const OptionalTensor& pse,
                                                SavedArguments saved, const OptionalTensor& sink,
                                                const OptionalTensor& dropoutMask) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_fusion_attention", "")
                         .typed<ForwardSignature>();
    at::AutoDispatchBelowADInplaceOrView guard;
    ForwardResult r = op.call(query, key, value, saved.headNum, saved.inputLayout, pse, saved.paddingMask,
                              saved.attenMask, saved.scale, saved.keepProb, saved.pre, saved.next,
                              saved.innerPrecise, viewList(saved.prefix), viewList(saved.actualSeqQ),
                              viewList(saved.actualSeqKv), saved.sparseMode, saved.genMaskParallel, saved.sync,
                              saved.softmaxLayout, sink, dropoutMask, saved.seed, saved.offset);
    saved.seed = std::get<4>(r), saved.offset = std::get<5>(r), saved.numels = std::get<6>(r);
    ctx->save_for_backward({query, key, value, pse.value_or(Tensor()), std::get<0>(r), std::get<1>(r),
                            std::get<2>(r), std::get<3>(r)});
    store(ctx, saved);
    lastArguments() = saved;
    // Gradients flow through the attention output only (the kernel ignores
    // those of the softmax statistics).
    ctx->mark_non_differentiable({std::get<1>(r), std::get<2>(r), std::get<3>(r)});
    return {std::get<0>(r), std::get<1>(r), std::get<2>(r), std::get<3>(r)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("npu::npu_fusion_attention_grad", "")
                         .typed<GradSignature>();
    const SavedArguments a = load(ctx);
    auto tensors = ctx->get_saved_variables();
    const OptionalTensor pse = tensors[3].defined() ? OptionalTensor(tensors[3]) : std::nullopt;
    Tensor dy = grads[0].defined() ? grads[0] : at::zeros_like(tensors[4]);
    GradResult r = op.call(tensors[0], tensors[1], tensors[2], dy, a.headNum, a.inputLayout, pse, a.paddingMask,
                           a.attenMask, tensors[5], tensors[6], tensors[7], tensors[4], a.scale, a.keepProb, a.pre,
                           a.next, a.innerPrecise, a.seed, a.offset, a.numels, viewList(a.prefix),
                           viewList(a.actualSeqQ), viewList(a.actualSeqKv), a.sparseMode, a.genMaskParallel, a.sync,
                           a.softmaxLayout, std::nullopt);
    return {std::get<0>(r), std::get<1>(r), std::get<2>(r), pse.has_value() ? std::get<3>(r) : Tensor(), Tensor(),
            Tensor(), Tensor()};
  }

  // The arguments travel to the backward as IValues of the context.
  static void store(torch::autograd::AutogradContext* ctx, const SavedArguments& a) {
    auto& d = ctx->saved_data;
    d["head_num"] = a.headNum;
    d["input_layout"] = a.inputLayout;
    d["padding_mask"] = a.paddingMask;
    d["atten_mask"] = a.attenMask;
    d["scale"] = a.scale;
    d["keep_prob"] = a.keepProb;
    d["pre"] = a.pre;
    d["next"] = a.next;
    d["inner_precise"] = a.innerPrecise;
    d["prefix"] = a.prefix;
    d["actual_seq_qlen"] = a.actualSeqQ;
    d["actual_seq_kvlen"] = a.actualSeqKv;
    d["sparse_mode"] = a.sparseMode;
    d["gen_mask_parallel"] = a.genMaskParallel;
    d["sync"] = a.sync;
    d["softmax_layout"] = a.softmaxLayout;
    d["seed"] = a.seed;
    d["offset"] = a.offset;
    d["numels"] = a.numels;
  }
  static SavedArguments load(torch::autograd::AutogradContext* ctx) {
    auto& d = ctx->saved_data;
    auto list = [&](const char* key) -> std::optional<std::vector<int64_t>> {
      const at::IValue& value = d[key];
      if (value.isNone()) return std::nullopt;
      return value.toIntVector();
    };
    SavedArguments a;
    a.headNum = d["head_num"].toInt();
    a.inputLayout = d["input_layout"].toStringRef();
    a.paddingMask = d["padding_mask"].toOptional<Tensor>();
    a.attenMask = d["atten_mask"].toOptional<Tensor>();
    a.scale = d["scale"].toDouble();
    a.keepProb = d["keep_prob"].toDouble();
    a.pre = d["pre"].toInt();
    a.next = d["next"].toInt();
    a.innerPrecise = d["inner_precise"].toInt();
    a.prefix = list("prefix");
    a.actualSeqQ = list("actual_seq_qlen");
    a.actualSeqKv = list("actual_seq_kvlen");
    a.sparseMode = d["sparse_mode"].toInt();
    a.genMaskParallel = d["gen_mask_parallel"].toBool();
    a.sync = d["sync"].toBool();
    a.softmaxLayout = d["softmax_layout"].toStringRef();
    a.seed = d["seed"].toInt();
    a.offset = d["offset"].toInt();
    a.numels = d["numels"].toInt();
    return a;
  }
  static SavedArguments& lastArguments() {
    thread_local SavedArguments arguments;
    return arguments;
  }
};

ForwardResult fusionAttentionAutograd(const Tensor& query, const Tensor& key, const Tensor& value, int64_t headNum,
                                      c10::string_view inputLayout, const OptionalTensor& pse,
                                      const OptionalTensor& paddingMask, const OptionalTensor& attenMask,
                                      double scale, double keepProb, int64_t preTokens, int64_t nextTokens,
                                      int64_t innerPrecise, at::OptionalIntArrayRef prefix,
                                      at::OptionalIntArrayRef actualSeqQ, at::OptionalIntArrayRef actualSeqKv,
                                      int64_t sparseMode, bool genMaskParallel, bool sync,
                                      c10::string_view softmaxLayout, const OptionalTensor& sink,
                                      const OptionalTensor& dropoutMask, int64_t seed, int64_t offset) {
  SavedArguments saved;
  saved.headNum = headNum;
  saved.inputLayout = std::string(inputLayout);
  saved.paddingMask = paddingMask, saved.attenMask = attenMask;
  saved.scale = scale, saved.keepProb = keepProb;
  saved.pre = preTokens, saved.next = nextTokens, saved.innerPrecise = innerPrecise;
  saved.prefix = ownedList(prefix), saved.actualSeqQ = ownedList(actualSeqQ), saved.actualSeqKv = ownedList(actualSeqKv);
  saved.sparseMode = sparseMode, saved.genMaskParallel = genMaskParallel, saved.sync = sync;
  saved.softmaxLayout = std::string(softmaxLayout);
  saved.seed = seed, saved.offset = offset;
  auto outputs = FusionAttentionFunction::apply(query, key, value, pse, saved, sink, dropoutMask);
  const SavedArguments& result = FusionAttentionFunction::lastArguments();
  return {outputs[0], outputs[1], outputs[2], outputs[3], result.seed, result.offset, result.numels};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
  m.impl("npu_fusion_attention", TORCH_FN(fusionAttention<true>));
  m.impl("npu_fusion_attention_grad", TORCH_FN(fusionAttentionGradNpu));
}

TORCH_LIBRARY_IMPL(npu, Meta, m) {
  m.impl("npu_fusion_attention", TORCH_FN(fusionAttention<false>));
  m.impl("npu_fusion_attention_grad", TORCH_FN(fusionAttentionGradMeta));
}

TORCH_LIBRARY_IMPL(npu, Autograd, m) { m.impl("npu_fusion_attention", TORCH_FN(fusionAttentionAutograd)); }

}  // namespace npusim::ops

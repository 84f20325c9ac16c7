// The attention math shared by torch_npu's attention operators (training:
// npu_fusion_attention and its grad; inference: prompt, incremental and fused
// infer attention), on host tensors in BNSD order (CPU aliases of device
// memory, or meta tensors in estimate-only mode). Scores, softmax statistics
// and gradients are computed in fp32, as the kernels accumulate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace npusim::ops {

enum class AttentionLayout { kBSH, kSBH, kBSND, kBNSD, kTND };

// Upper-cases `layout` and checks it (npu_fusion_attention's message).
AttentionLayout parseFusionAttentionLayout(const std::string& layout);

struct AttentionProblem {
  at::Tensor q;  // [B, N, Sq, D]
  at::Tensor k;  // [B, Nkv, Skv, D]
  at::Tensor v;  // [B, Nkv, Skv, Dv]
  at::Tensor pse;     // optional: broadcastable to [B, N, Sq, Skv]
  at::Tensor masked;  // optional: bool, broadcastable to [B, N, Sq, Skv], true = masked out
  bool causal = false;  // top-left causal (key j > query i masked), in place of `masked`
  double scale = 1.0;
  bool pseInsideScale = true;  // scale*(QK^T + pse) (FA, pse_type 1); else scale*QK^T + pse
  at::Tensor keep;             // optional: bool dropout keep mask [B, N, Sq, Skv]
  double keepProb = 1.0;
  // fp16 high-performance mode of the inference kernels: Q K^T (fp32
  // accumulation) is stored in fp16 before it is scaled, and the
  // probabilities are rounded to fp16 before they meet V.
  bool halfScores = false;
};

struct AttentionOutputs {
  at::Tensor out;     // [B, N, Sq, Dv]: fp32, or q's dtype from the flash path
  at::Tensor rowMax;  // fp32 [B, N, Sq]: max of the scaled, masked logits
  at::Tensor rowSum;  // fp32 [B, N, Sq]: sum of exp(logit - max)
};

struct AttentionGrads {
  at::Tensor dq, dk, dv;  // shapes of q, k, v: fp32, or q's dtype from the flash path
  at::Tensor dpse;        // fp32, shape of pse (undefined without pse)
};

AttentionOutputs attentionForward(const AttentionProblem& problem);
// rowMax / rowSum may be undefined: then they are recomputed.
AttentionGrads attentionBackward(const AttentionProblem& problem, const at::Tensor& dout, const at::Tensor& out,
                                 at::Tensor rowMax, at::Tensor rowSum);

// The mask a sparse_mode stands for on one [sq, skv] block (i query, j key
// index): true = masked out. `given` is the caller's mask already shaped for
// the block (bool), used by modes 0, 1 and 5. `prefixLength` is prefix[b]
// (mode 6). Returns undefined when nothing is masked.
at::Tensor sparseModeMask(int64_t sparseMode, const at::Tensor& given, int64_t sq, int64_t skv, int64_t pre,
                          int64_t next, int64_t prefixLength, const at::TensorOptions& options);

// Share of the score matrix a sparse mode leaves the kernel to compute, by the
// key range of each 128-row query block (perf/AttentionSparsity.h).
double attendedFraction(int64_t sparseMode, bool hasMask, int64_t sq, int64_t skv, int64_t pre, int64_t next);

// The Bernoulli keep mask of the dropout that (seed, offset) name: the same
// (seed, offset, numel) gives the same mask, so the grad regenerates it.
at::Tensor dropoutKeepMask(int64_t numel, double keepProb, int64_t seed, int64_t offset,
                           const at::TensorOptions& options);

// Layout conversions: a query/key/value tensor to BNSD (a view), and the
// attention output back.
at::Tensor toBnsd(const at::Tensor& t, AttentionLayout layout, int64_t heads);
at::Tensor fromBnsd(const at::Tensor& t, AttentionLayout layout);

}  // namespace npusim::ops

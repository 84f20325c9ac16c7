// ATB's paged attention, torch_npu._npu_paged_attention (vllm-ascend's decode
// step): each sequence's query row attends to the keys and values of its first
// context_lens[i] positions, which its block table scatters over the caches in
// blocks of block_size positions (position p lives in block
// block_table[i][p / block_size] at offset p % block_size). GQA: num_heads
// query heads share num_kv_heads key/value heads. softmax(scale·q·Kᵀ)·V in
// fp32, written to `out` in the query's dtype.
//
//   query       [num_tokens, num_heads, head_size]
//   key_cache   [num_blocks, block_size, num_kv_heads, head_size]
//   value_cache [num_blocks, block_size, num_kv_heads, head_size_v]
//   block_table int32 [num_tokens, max_blocks_per_seq]
//   context_lens int32 [num_tokens] (host values, part of the launch)
//   out         [num_tokens, num_heads, head_size_v]
#include <ATen/ATen.h>
#include <torch/library.h>

#include "ops/AttentionMath.h"
#include "ops/KernelSupport.h"
#include "perf/Calibration.h"

namespace npusim::ops {
namespace {

using Tensor = at::Tensor;
constexpr const char* kOp = "_npu_paged_attention";

void checkShapes(const Tensor& query, const Tensor& keyCache, const Tensor& valueCache, int64_t numKvHeads,
                 int64_t numHeads, const Tensor& blockTable, const Tensor& contextLens, const Tensor& out) {
  NPU_OPS_CHECK_VALUE(numHeads > 0 && numKvHeads > 0 && numHeads % numKvHeads == 0, kOp,
                      ": num_heads (", numHeads, ") must be a positive multiple of num_kv_heads (", numKvHeads, ")");
  NPU_OPS_CHECK(query.dim() == 3 && query.size(1) == numHeads, kOp,
                ": query must be [num_tokens, num_heads, head_size] with num_heads = ", numHeads, ", but got ",
                query.sizes());
  NPU_OPS_CHECK(keyCache.dim() == 4 && keyCache.size(2) == numKvHeads && keyCache.size(3) == query.size(2), kOp,
                ": key_cache must be [num_blocks, block_size, num_kv_heads, head_size], but got ", keyCache.sizes());
  NPU_OPS_CHECK(valueCache.dim() == 4 && valueCache.size(0) == keyCache.size(0) &&
                    valueCache.size(1) == keyCache.size(1) && valueCache.size(2) == numKvHeads,
                kOp, ": value_cache must be [num_blocks, block_size, num_kv_heads, head_size_v], but got ",
                valueCache.sizes());
  NPU_OPS_CHECK(blockTable.dim() == 2 && blockTable.size(0) == query.size(0), kOp,
                ": block_table must be [num_tokens, max_blocks_per_seq], but got ", blockTable.sizes());
  NPU_OPS_CHECK(blockTable.scalar_type() == at::kInt, kOp, ": block_table must be int32, but got ",
                blockTable.scalar_type());
  NPU_OPS_CHECK(contextLens.dim() == 1 && contextLens.size(0) == query.size(0), kOp,
                ": context_lens must hold one length per token, but got ", contextLens.sizes());
  NPU_OPS_CHECK(contextLens.scalar_type() == at::kInt || contextLens.scalar_type() == at::kLong, kOp,
                ": context_lens must be int32, but got ", contextLens.scalar_type());
  const std::vector<int64_t> expected{query.size(0), numHeads, valueCache.size(3)};
  NPU_OPS_CHECK(out.sizes().vec() == expected, kOp, ": out must be ", c10::IntArrayRef(expected), ", but got ",
                out.sizes());
  NPU_OPS_CHECK(out.scalar_type() == query.scalar_type(), kOp, ": out must have the query's dtype ",
                query.scalar_type(), ", but got ", out.scalar_type());
}

// The attention of every sequence on host tensors; returns the summed context lengths.
int64_t pagedAttentionHost(const Tensor& query, const Tensor& keyCache, const Tensor& valueCache, int64_t numKvHeads,
                           int64_t numHeads, double scale, const Tensor& blockTable, const Tensor& contextLens,
                           const Tensor& out) {
  const int64_t blockSize = keyCache.size(1), tokens = query.size(0);
  if (contextLens.is_meta()) return tokens * blockTable.size(1) * blockSize;  // estimate-only, device lengths
  const Tensor lengths = contextLens.to(at::kCPU, at::kLong).contiguous();
  const int64_t* length = lengths.data_ptr<int64_t>();
  int64_t attended = 0;
  if (query.is_meta()) {
    // Estimate-only mode: the caches have no data, the (host) lengths do; only the work counts.
    for (int64_t i = 0; i < tokens; ++i) attended += length[i];
    return attended;
  }
  const Tensor table = blockTable.to(at::kLong);
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t len = length[i];
    const int64_t blocks = (len + blockSize - 1) / blockSize;
    NPU_OPS_CHECK(len > 0 && blocks <= table.size(1), kOp, ": context_lens[", i, "] = ", len,
                  " needs ", blocks, " blocks, but block_table holds ", table.size(1), " per sequence");
    const Tensor ids = table[i].narrow(0, 0, blocks);
    NPU_OPS_CHECK(ids.min().item<int64_t>() >= 0 && ids.max().item<int64_t>() < keyCache.size(0), kOp,
                  ": block_table[", i, "] names a block outside the caches (", keyCache.size(0), " blocks)");
    // [blocks * block_size, kv_heads, d] -> the first len positions -> [1, kv_heads, len, d]
    auto gather = [&](const Tensor& cache) {
      return cache.index_select(0, ids).flatten(0, 1).narrow(0, 0, len).permute({1, 0, 2}).unsqueeze(0);
    };
    AttentionProblem p;
    p.q = query[i].unsqueeze(0).unsqueeze(2);  // [1, heads, 1, d]
    p.k = gather(keyCache);
    p.v = gather(valueCache);
    p.scale = scale;
    const AttentionOutputs o = attentionForward(p);
    out[i].copy_(o.out.squeeze(2).squeeze(0));
    attended += len;
  }
  return attended;
}

void pagedAttentionNpu(const Tensor& query, const Tensor& keyCache, const Tensor& valueCache, int64_t numKvHeads,
                       int64_t numHeads, double scaleValue, const Tensor& blockTable, const Tensor& contextLens,
                       const Tensor& out) {
  requireChip(kOp, {ChipFamily::kAtlasA2, ChipFamily::kAtlasA3});
  requireNpuTensors({&query, &keyCache, &valueCache, &blockTable, &out});
  checkShapes(query, keyCache, valueCache, numKvHeads, numHeads, blockTable, contextLens, out);
  const Tensor hostLengths = contextLens.device().is_cpu() ? contextLens : hostOperand(contextLens);
  const int64_t attended =
      pagedAttentionHost(hostOperand(query), hostOperand(keyCache), hostOperand(valueCache), numKvHeads, numHeads,
                         scaleValue, hostOperand(blockTable), hostLengths, hostOperand(out));
  // Priced as the decode kernel: two GEMMs over the attended keys of each head, the softmax
  // over its scores, and the keys and values it reads from the caches.
  perf::FusedKernelWork work;
  if (!perf::fusedCubePrecision(perfDtype(query.scalar_type()), work.precision, work.operandBytes)) {
    work.precision = perf::CubePrecision::kFloat32, work.operandBytes = 4;
  }
  const int64_t headDim = query.size(2), valueDim = valueCache.size(3);
  work.addGemm(perf::GemmShape{numHeads, 1, attended, headDim});
  work.addGemm(perf::GemmShape{numHeads, 1, valueDim, attended});
  work.vectorElements = double(numHeads) * double(attended);
  work.opsPerElement = perf::calibration::kFlashOpsPerScore;
  const double element = static_cast<double>(keyCache.element_size());
  work.hbmBytes = bytesOf(query) + bytesOf(out) + bytesOf(blockTable) +
                  double(attended) * double(numKvHeads) * double(headDim + valueDim) * element;
  chargeFusedKernel(query.device().index(), "npu::_npu_paged_attention", perf::OperatorKind::kAttention, work);
}

void pagedAttentionMeta(const Tensor& query, const Tensor& keyCache, const Tensor& valueCache, int64_t numKvHeads,
                        int64_t numHeads, double scaleValue, const Tensor& blockTable, const Tensor& contextLens,
                        const Tensor& out) {
  checkShapes(query, keyCache, valueCache, numKvHeads, numHeads, blockTable, contextLens, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) { m.impl("_npu_paged_attention", TORCH_FN(pagedAttentionNpu)); }
TORCH_LIBRARY_IMPL(npu, Meta, m) { m.impl("_npu_paged_attention", TORCH_FN(pagedAttentionMeta)); }

}  // namespace npusim::ops

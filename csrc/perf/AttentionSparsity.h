// Which score blocks a FlashAttention kernel computes under each sparse_mode
// of npu_fusion_attention (reference torch_npu-custom-ops.md §4.1): the cost
// of a masked attention is the cost of the blocks the kernel runs, not of the
// whole [Sq, Skv] score matrix.
//
// The kernel (ops-transformer FlashAttentionScore / FlashAttentionScoreGrad,
// GetS2LoopRange of every template) takes the query rows in blocks of S1.i
// rows and, for each block, loops over one contiguous key range
// [s2Start, s2End) that depends only on the block's first and last row:
//   no mask / allMask (1):      [0, Skv)
//   leftUpCausal (2):           [0, min(r1, Skv))
//   rightDownCausal (3):        [0, min(r1 + Skv - Sq, Skv))
//   band, top-left origin (0, 8; pre/next):
//                               [max(r0 - pre, 0), min(r1 + next, Skv))
//   band, right-down origin (4, 7; pre/next):
//                               [max(r0 - pre + Skv - Sq, 0), min(r1 + next + Skv - Sq, Skv))
//   prefix (5, 6):              [0, max(min(r1 + Skv - Sq, Skv), prefix))
// with r0, r1 the block's first row and one past its last. Keys inside the
// range are all computed (the mask is applied element-wise on the diagonal
// blocks); blocks whose range is empty are skipped. Mode 0 with pre/next
// wider than the sequence is the whole matrix. TND runs this per batch with
// that batch's lengths. The host balances the cores by this area (the sparse
// per-core start table), so the work spreads evenly over the cores.
#pragma once

#include <cstdint>

namespace npusim::perf {

struct AttentionBlockWork {
  double computedScores = 0;  // sum over query blocks of rows x keys in its range
  double fullScores = 0;      // Sq x Skv
  int64_t queryBlocks = 0;    // query blocks with a non-empty key range (the kernel's work items)
  int64_t keyTiles = 0;       // query blocks x key tiles of kFlashKeyTile keys their ranges span

  double fraction() const noexcept { return fullScores > 0 ? computedScores / fullScores : 0.0; }
};

// The key range [start, end) the kernel loops over for query rows [r0, r1).
struct KeyRange {
  int64_t start = 0;
  int64_t end = 0;
};
KeyRange attentionKeyRange(int64_t sparseMode, bool hasMask, int64_t sq, int64_t skv, int64_t preTokens,
                           int64_t nextTokens, int64_t prefix, int64_t r0, int64_t r1) noexcept;

// The blocks of one [Sq, Skv] problem (one batch of TND, or every batch of
// the other layouts), with query blocks of `queryBlock` rows.
AttentionBlockWork attentionBlocks(int64_t sparseMode, bool hasMask, int64_t sq, int64_t skv, int64_t preTokens,
                                   int64_t nextTokens, int64_t prefix, int64_t queryBlock) noexcept;

}  // namespace npusim::perf

#include "perf/AttentionSparsity.h"

#include <algorithm>

#include "perf/Calibration.h"

namespace npusim::perf {

KeyRange attentionKeyRange(int64_t sparseMode, bool hasMask, int64_t sq, int64_t skv, int64_t preTokens,
                           int64_t nextTokens, int64_t prefix, int64_t r0, int64_t r1) noexcept {
  // pre/next arrive as int64 up to INT32_MAX (torch_npu's default): sums stay far from overflow.
  const int64_t shift = skv - sq;  // right-down alignment
  int64_t start = 0, end = skv;
  if (hasMask) {
    switch (sparseMode) {
      case 0:
      case 8:  // band with top-left origin
        start = r0 - preTokens;
        end = r1 + nextTokens;
        break;
      case 2: end = r1; break;
      case 3: end = r1 + shift; break;
      case 4:
      case 7:  // band with right-down origin
        start = r0 - preTokens + shift;
        end = r1 + nextTokens + shift;
        break;
      case 5:
      case 6: end = std::max(std::min(r1 + shift, skv), prefix); break;
      default: break;  // 1 (allMask) and anything else: every key
    }
  }
  KeyRange range;
  range.start = std::clamp<int64_t>(start, 0, skv);
  range.end = std::clamp<int64_t>(end, range.start, skv);
  return range;
}

AttentionBlockWork attentionBlocks(int64_t sparseMode, bool hasMask, int64_t sq, int64_t skv, int64_t preTokens,
                                   int64_t nextTokens, int64_t prefix, int64_t queryBlock) noexcept {
  AttentionBlockWork work;
  if (sq <= 0 || skv <= 0) return work;
  work.fullScores = double(sq) * double(skv);
  const int64_t block = std::max<int64_t>(1, queryBlock);
  const int64_t tile = calibration::kFlashKeyTile;
  for (int64_t r0 = 0; r0 < sq; r0 += block) {
    const int64_t r1 = std::min(r0 + block, sq);
    const KeyRange keys = attentionKeyRange(sparseMode, hasMask, sq, skv, preTokens, nextTokens, prefix, r0, r1);
    const int64_t length = keys.end - keys.start;
    if (length <= 0) continue;
    work.computedScores += double(r1 - r0) * double(length);
    work.queryBlocks += 1;
    work.keyTiles += (length + tile - 1) / tile;
  }
  return work;
}

}  // namespace npusim::perf

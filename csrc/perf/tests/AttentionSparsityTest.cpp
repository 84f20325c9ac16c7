// Block counts of npu_fusion_attention's sparse modes (AttentionSparsity.h):
// the key range of each query block, the blocks computed and skipped.
#include <gtest/gtest.h>

#include <climits>

#include "perf/AttentionSparsity.h"

using namespace npusim::perf;

namespace {

constexpr int64_t kBlock = 128;
constexpr int64_t kUnbounded = INT32_MAX;  // torch_npu's default pre_tockens / next_tockens

// Sum of 1..n.
double triangle(int64_t n) { return double(n) * double(n + 1) / 2.0; }

}  // namespace

TEST(AttentionSparsity, WithoutMaskEveryBlockIsComputed) {
  const AttentionBlockWork w = attentionBlocks(3, false, 4096, 4096, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 32);
  EXPECT_EQ(w.keyTiles, 32 * 32);
  EXPECT_DOUBLE_EQ(w.fraction(), 1.0);
}

TEST(AttentionSparsity, AllMaskComputesEveryBlock) {
  const AttentionBlockWork w = attentionBlocks(1, true, 2048, 2048, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(w.keyTiles, 16 * 16);
  EXPECT_DOUBLE_EQ(w.fraction(), 1.0);
}

TEST(AttentionSparsity, LeftUpCausalStopsEachBlockAtItsLastRow) {
  // Block r (rows 128r .. 128r+127) loops over keys [0, 128(r+1)): r+1 tiles.
  const AttentionBlockWork w = attentionBlocks(2, true, 4096, 4096, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 32);
  EXPECT_EQ(w.keyTiles, int64_t(triangle(32)));  // 528 of 1024
  EXPECT_DOUBLE_EQ(w.computedScores, 128.0 * 128.0 * triangle(32));
  EXPECT_NEAR(w.fraction(), 528.0 / 1024.0, 1e-12);
}

TEST(AttentionSparsity, RightDownCausalShiftsByTheKeyExcess) {
  // Sq 1024, Skv 4096: block r sees [0, 128(r+1) + 3072).
  const AttentionBlockWork w = attentionBlocks(3, true, 1024, 4096, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 8);
  EXPECT_EQ(w.keyTiles, 8 * 24 + int64_t(triangle(8)));
  // Square: the same blocks as leftUpCausal.
  const AttentionBlockWork square = attentionBlocks(3, true, 2048, 2048, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(square.keyTiles, attentionBlocks(2, true, 2048, 2048, 0, 0, 0, kBlock).keyTiles);
}

TEST(AttentionSparsity, LeftUpCausalWithMoreQueriesThanKeysSkipsNothingBelowTheKeys) {
  // Rows past Skv see every key: blocks 0..7 grow, blocks 8..15 take all 8 tiles.
  const AttentionBlockWork w = attentionBlocks(2, true, 2048, 1024, kUnbounded, kUnbounded, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 16);
  EXPECT_EQ(w.keyTiles, int64_t(triangle(8)) + 8 * 8);
}

TEST(AttentionSparsity, DefaultMaskWithANarrowBandComputesOnlyTheBand) {
  // sparse_mode 0, pre 1024, next 0 on 8192 x 8192: block r runs
  // [max(128r - 1024, 0), 128(r+1)): at most 9 tiles instead of 64.
  const AttentionBlockWork w = attentionBlocks(0, true, 8192, 8192, 1024, 0, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 64);
  int64_t tiles = 0;
  for (int64_t r = 0; r < 64; ++r) tiles += std::min<int64_t>(r + 1, 9);
  EXPECT_EQ(w.keyTiles, tiles);
  EXPECT_LT(w.fraction(), 0.14);
  // The same mode with pre/next as wide as the sequence is the whole matrix.
  EXPECT_DOUBLE_EQ(attentionBlocks(0, true, 8192, 8192, kUnbounded, kUnbounded, 0, kBlock).fraction(), 1.0);
}

TEST(AttentionSparsity, DefaultMaskWithNextZeroIsCausal) {
  const AttentionBlockWork band = attentionBlocks(0, true, 4096, 4096, kUnbounded, 0, 0, kBlock);
  const AttentionBlockWork causal = attentionBlocks(2, true, 4096, 4096, 0, 0, 0, kBlock);
  EXPECT_EQ(band.keyTiles, causal.keyTiles);
  EXPECT_DOUBLE_EQ(band.computedScores, causal.computedScores);
}

TEST(AttentionSparsity, BandModeFourIsMindSpeedsCausalAndItsSlidingWindow) {
  // MindSpeed-LLM passes sparse_mode 4 with pre 65536, next 0 above 2K tokens: causal.
  const AttentionBlockWork causal = attentionBlocks(4, true, 32768, 32768, 65536, 0, 0, kBlock);
  EXPECT_EQ(causal.keyTiles, int64_t(triangle(256)));
  // Mistral's --sliding-window 4096 sets pre 4096: block r runs
  // [max(128r - 4096, 0), 128(r+1)), at most 33 tiles.
  const AttentionBlockWork window = attentionBlocks(4, true, 32768, 32768, 4096, 0, 0, kBlock);
  int64_t tiles = 0;
  for (int64_t r = 0; r < 256; ++r) tiles += std::min<int64_t>(r + 1, 33);
  EXPECT_EQ(window.keyTiles, tiles);
  EXPECT_NEAR(window.fraction(), (4096.0 * 32768 + 128.0 * 32768 - 4096.0 * 4096 / 2) / (32768.0 * 32768),
              0.01);
}

TEST(AttentionSparsity, BandModeFourAlignsToTheBottomRight) {
  // Sq 512, Skv 2048, pre 256, next 0: block r runs [128r + 1536 - 256, 128(r+1) + 1536).
  const KeyRange first = attentionKeyRange(4, true, 512, 2048, 256, 0, 0, 0, 128);
  EXPECT_EQ(first.start, 1280);
  EXPECT_EQ(first.end, 1664);
  const AttentionBlockWork w = attentionBlocks(4, true, 512, 2048, 256, 0, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 4);
  EXPECT_DOUBLE_EQ(w.computedScores, 4 * 128.0 * 384.0);
}

TEST(AttentionSparsity, PrefixKeepsThePrefixColumnsOfEveryBlock) {
  // sparse_mode 6, prefix 1000 on 4096 x 4096: block r runs [0, max(128(r+1), 1000)).
  const AttentionBlockWork w = attentionBlocks(6, true, 4096, 4096, 0, 0, 1000, kBlock);
  double scores = 0;
  for (int64_t r = 0; r < 32; ++r) scores += 128.0 * double(std::max<int64_t>(128 * (r + 1), 1000));
  EXPECT_DOUBLE_EQ(w.computedScores, scores);
  EXPECT_GT(w.computedScores, attentionBlocks(3, true, 4096, 4096, 0, 0, 0, kBlock).computedScores);
  // Mode 5 (the same pattern from a full mask) takes the same blocks.
  EXPECT_DOUBLE_EQ(attentionBlocks(5, true, 4096, 4096, 0, 0, 1000, kBlock).computedScores, scores);
}

TEST(AttentionSparsity, SplitCausalModesAreBands) {
  // TND modes 7 (right-down) and 8 (top-left) price as bands of their origin.
  EXPECT_DOUBLE_EQ(attentionBlocks(7, true, 1024, 3072, 512, 0, 0, kBlock).computedScores,
                   attentionBlocks(4, true, 1024, 3072, 512, 0, 0, kBlock).computedScores);
  EXPECT_DOUBLE_EQ(attentionBlocks(8, true, 1024, 3072, 512, 0, 0, kBlock).computedScores,
                   attentionBlocks(0, true, 1024, 3072, 512, 0, 0, kBlock).computedScores);
}

TEST(AttentionSparsity, BlocksEntirelyOutsideTheBandAreSkipped) {
  // Mode 4 with next far below the diagonal: the first rows see no key at all.
  const AttentionBlockWork w = attentionBlocks(4, true, 1024, 1024, 1024, -512, 0, kBlock);
  EXPECT_EQ(w.queryBlocks, 4);  // blocks 4..7 only
  const KeyRange none = attentionKeyRange(4, true, 1024, 1024, 1024, -512, 0, 0, 128);
  EXPECT_EQ(none.end - none.start, 0);
}

TEST(AttentionSparsity, EmptyProblemsHaveNoWork) {
  EXPECT_EQ(attentionBlocks(2, true, 0, 128, 0, 0, 0, kBlock).queryBlocks, 0);
  EXPECT_DOUBLE_EQ(attentionBlocks(2, true, 128, 0, 0, 0, 0, kBlock).fraction(), 0.0);
}

// The executor's tiles for attn_N_prefill (runtime/cuda/AttentionAbi.h
// prefillTiles): every token in exactly one tile, tiles in order, never
// across a slot (or @encode segment) boundary, at most 64 tokens, and no
// more tiles than each group's tokens need.
#include "runtime/cuda/AttentionAbi.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using genrt::cuda::kPrefillTokensPerTile;
using genrt::cuda::prefillTiles;

TEST(PrefillTiles, CoverEachGroupInOrderInPiecesOfAtMost64) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    // Runs of one group: lengths 1..300 (often past a tile), groups that
    // may repeat after another one (a slot's chunk is contiguous, but the
    // tiles must not rely on groups being distinct).
    std::vector<int64_t> group;
    std::vector<int64_t> runLengths;
    const int runs = 1 + static_cast<int>(rng() % 6);
    for (int r = 0; r < runs; ++r) {
      const int64_t len = 1 + static_cast<int64_t>(rng() % 300), g = static_cast<int64_t>(rng() % 3);
      if (!group.empty() && group.back() == g) {
        runLengths.back() += len;
      } else {
        runLengths.push_back(len);
      }
      group.insert(group.end(), static_cast<size_t>(len), g);
    }
    const int64_t T = static_cast<int64_t>(group.size());
    std::vector<int32_t> out(2 * static_cast<size_t>(T), -1);
    const int64_t n = prefillTiles(T, [&](int64_t t) { return group[static_cast<size_t>(t)]; }, out.data());
    int64_t next = 0, want = 0;
    for (int64_t len : runLengths)
      want += (len + kPrefillTokensPerTile - 1) / kPrefillTokensPerTile;
    EXPECT_EQ(n, want);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t first = out[2 * i], count = out[2 * i + 1];
      ASSERT_EQ(first, next) << "tile " << i;
      ASSERT_GE(count, 1);
      ASSERT_LE(count, kPrefillTokensPerTile);
      for (int64_t t = first; t < first + count; ++t)
        EXPECT_EQ(group[static_cast<size_t>(t)], group[static_cast<size_t>(first)]) << "tile " << i << " token " << t;
      next = first + count;
    }
    EXPECT_EQ(next, T);
  }
}

TEST(PrefillTiles, EmptyRunHasNoTiles) {
  int32_t out[2] = {-1, -1};
  EXPECT_EQ(prefillTiles(0, [](int64_t) { return 0; }, out), 0);
}

} // namespace

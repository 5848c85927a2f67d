// The decode kernel's shape (runtime/cuda/AttentionAbi.h decodeShape), which
// genc and the executor derive alike: K/V streamed into registers only
// where asked and the kernel can (tensor cores, head dims 64 and 128), its
// shared memory then only the warps' sums and the group's queries; the
// shared-memory tiles everywhere else, as before.
#include "runtime/cuda/AttentionAbi.h"

#include <gtest/gtest.h>

namespace {

using genrt::cuda::decodeShape;
using genrt::cuda::kDecodeStageBudget;

TEST(DecodeShape, RegistersOnlyForTensorCoresAtHeadDims64And128) {
  for (int mode : {0, 1})
    for (long long group : {1, 2, 4, 8, 16})
      for (long long D : {16, 32, 64, 80, 96, 128, 256})
        for (int es : {2, 4})
          for (bool bf16 : {false, true}) {
            if (es == 4 && bf16)
              continue;
            const auto tiles = decodeShape(mode, group, D, es, bf16, kDecodeStageBudget, false);
            const auto regs = decodeShape(mode, group, D, es, bf16, kDecodeStageBudget, true);
            EXPECT_FALSE(tiles.registers);
            const bool want = tiles.mma != 0 && (D == 64 || D == 128);
            ASSERT_EQ(regs.registers, want) << "D " << D << " es " << es;
            EXPECT_EQ(regs.heads, tiles.heads);
            EXPECT_EQ(regs.mma, tiles.mma);
            EXPECT_EQ(regs.keysPerTile, tiles.keysPerTile);
            if (!want) {
              EXPECT_EQ(regs.sharedBytes, tiles.sharedBytes);
              continue;
            }
            // The four warps' O rows [4][8][D] then the group's sums [G][D]
            // (f32); the queries [G][D] fit before them.
            EXPECT_EQ(regs.sharedBytes, (4 * 8 * D + tiles.heads * D) * 4);
            EXPECT_LT(regs.sharedBytes, tiles.sharedBytes);
          }
}

TEST(DecodeShape, PackedEncodeAndOddShapesHaveNoDecodeKernelEitherWay) {
  EXPECT_EQ(decodeShape(2, 4, 128, 2, false, kDecodeStageBudget, true).heads, 0);
  EXPECT_EQ(decodeShape(0, 9, 128, 2, false, kDecodeStageBudget, true).heads, 0);
  EXPECT_FALSE(decodeShape(0, 9, 128, 2, false, kDecodeStageBudget, true).registers);
  EXPECT_EQ(decodeShape(0, 4, 264, 2, false, kDecodeStageBudget, true).heads, 0);
}

// The CUDA-core kernel (no tensor cores: f32 caches, an i8 cross cache's
// one-byte rows) adds its key subsets' sums up in the tiles' memory: a
// shape it would not fit has no decode kernel (it would not compile:
// genc_attn_decode_fma's static_assert), every other keeps its kernel.
TEST(DecodeShape, TheCudaCoreKernelsSumsFitItsTiles) {
  for (long long group : {1, 2, 3, 4, 8, 16})
    for (long long D : {16, 32, 48, 64, 80, 128, 256})
      for (int es : {1, 4}) {
        const auto s = decodeShape(1, group, D, es, false);
        if (!s.heads)
          continue;
        const long long subsets = 128 / (D / 2), rowBytes = (D * es / 16 + 1) * 16;
        EXPECT_EQ(s.mma, 0);
        EXPECT_GE(s.stages * 2 * s.keysPerTile * rowBytes, (subsets + 1) * s.heads * D * 4)
            << "group " << group << " D " << D << " es " << es;
      }
  EXPECT_EQ(decodeShape(1, 8, 16, 1, false).heads, 0);  // i8 rows of 16: the sums do not fit
  EXPECT_EQ(decodeShape(1, 4, 16, 1, false).heads, 4);  // they do at 4 heads a block
  EXPECT_EQ(decodeShape(1, 8, 64, 1, false).heads, 8);
  EXPECT_EQ(decodeShape(1, 8, 16, 4, false).heads, 8);  // f32 rows of 16 as before
}

// An i8 cross cache in a 16-bit plan: its codes take the tensor cores from
// registers where registers are asked for and the head dim allows (64,
// 128), with the register kernel's shape and the plan's mma type; a plan
// without registers (every i8 plan from before this rule), an f32 plan, a
// self-attention cache or another head dim keeps the CUDA-core kernel's
// shape exactly.
TEST(DecodeShape, AnI8CrossCacheTakesTheTensorCoresFromRegisters) {
  for (long long group : {1, 2, 4, 8, 16})
    for (long long D : {16, 32, 64, 80, 128})
      for (int codes : {0, 1, 2})
        for (bool registers : {false, true})
          for (int mode : {0, 1}) {
            const auto s = decodeShape(mode, group, D, 1, false, kDecodeStageBudget, registers, codes);
            const auto fma = decodeShape(mode, group, D, 1, false, kDecodeStageBudget, false);
            const bool want = mode == 1 && codes != 0 && registers && (D == 64 || D == 128);
            ASSERT_EQ(s.registers, want) << "group " << group << " D " << D << " codes " << codes;
            if (!want) {
              EXPECT_EQ(s.mma, fma.mma);
              EXPECT_EQ(s.heads, fma.heads);
              EXPECT_EQ(s.sharedBytes, fma.sharedBytes);
              EXPECT_EQ(s.keysPerTile, fma.keysPerTile);
              continue;
            }
            EXPECT_EQ(s.mma, codes);
            EXPECT_EQ(s.keysPerTile, 64);
            EXPECT_EQ(s.heads, decodeShape(mode, group, D, 2, codes == 2, kDecodeStageBudget, true).heads);
            EXPECT_EQ(s.sharedBytes, (4 * 8 * D + s.heads * D) * 4);
          }
}

} // namespace

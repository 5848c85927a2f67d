// runtime/KvLayout: the rolling-window rule, the element offsets both
// executors index with, the byte counts genc reports, and refusal of sizes
// that overflow.
#include "runtime/kv/KvLayout.h"

#include <gtest/gtest.h>

namespace {

using genrt::DType;
using genrt::KvLayout;

KvLayout layout(DType dt, int64_t slots, int64_t maxLength) {
  KvLayout l;
  l.dtype = dt;
  l.slots = slots;
  l.maxLength = maxLength;
  return l;
}

TEST(KvLayout, WindowedLayersKeepARollingBuffer) {
  KvLayout l = layout(DType::F16, 3, 100);
  l.addLayer(2, 8, 0);
  l.addLayer(2, 8, 16);  // sliding window: 16 rows
  l.addLayer(2, 8, 500); // a window past max length keeps max length
  EXPECT_EQ(l.layers[0].capacity, 100);
  EXPECT_EQ(l.layers[1].capacity, 16);
  EXPECT_EQ(l.layers[2].capacity, 100);
  // Position 17 of a 16-row buffer lives in row 1; slot-major, then head.
  EXPECT_EQ(l.offset(1, 2, 1, 17), ((2 * 2 + 1) * 16 + 1) * 8);
  EXPECT_EQ(l.offset(0, 0, 0, 99), 99 * 8);
  EXPECT_EQ(l.selfBytes(), 2 * 3 * 2 * 8 * (100 + 16 + 100) * 2);
  EXPECT_TRUE(l.verify());
}

TEST(KvLayout, CrossEntriesBelongToBatchItems) {
  KvLayout l = layout(DType::F32, 8, 10);
  l.maxSourceLength = 12; // a source's rows, apart from the decoder's 10
  l.crossEntries = 2;
  l.crossLayers.push_back({4, 16});
  EXPECT_EQ(l.crossOffset(0, 1, 3, 9), ((1 * 4 + 3) * 12 + 9) * 16);
  EXPECT_EQ(l.crossBytes(), 2 * 2 * 4 * 12 * 16 * 4);
  EXPECT_TRUE(l.verify());
  l.maxSourceLength = 0; // cross layers with no source length
  EXPECT_FALSE(l.verify());
}

// An i8 cross cache: per layer K's codes, V's, then their f32 row scales;
// each layer starts where the one before ends.
TEST(KvLayout, AnInt8CrossCacheKeepsARowScaleBesideItsCodes) {
  KvLayout l = layout(DType::F16, 8, 10);
  l.maxSourceLength = 12;
  l.crossEntries = 2;
  l.crossLayers.push_back({4, 16});
  l.crossLayers.push_back({2, 64});
  const int64_t f16 = l.crossBytes();
  EXPECT_EQ(l.crossLayerByteBase(1), 2 * 2 * 4 * 12 * 16 * 2);
  l.crossI8 = true;
  EXPECT_EQ(l.crossDtype(), DType::I8);
  EXPECT_EQ(l.crossHalfBytes(0), 2 * 4 * 12 * 16);
  EXPECT_EQ(l.crossScaleBytes(0), 2 * 4 * 12 * 4);
  EXPECT_EQ(l.crossLayerByteBase(1), 2 * (2 * 4 * 12 * 16 + 2 * 4 * 12 * 4));
  EXPECT_EQ(l.crossBytes(), l.crossLayerByteBase(1) + 2 * (2 * 2 * 12 * 64 + 2 * 2 * 12 * 4));
  EXPECT_LT(l.crossBytes(), f16 * 6 / 10);
  EXPECT_TRUE(l.verify());
  l.crossLayers[1].headDim = 66; // a row scale would land off 4-byte alignment
  EXPECT_FALSE(l.verify());
}

// An odd number of rows (batch 1, one KV head, 255 source positions): every
// layer's codes still start on 16 bytes (the decode kernel's 16-byte copies)
// and V's scales follow K's at a 16-byte boundary.
TEST(KvLayout, AnInt8CrossCacheKeepsEveryLayer16ByteAligned) {
  KvLayout l = layout(DType::F16, 4, 10);
  l.maxSourceLength = 255;
  l.crossEntries = 1;
  l.crossI8 = true;
  for (int i = 0; i < 3; ++i)
    l.crossLayers.push_back({1, 64});
  ASSERT_TRUE(l.verify());
  EXPECT_EQ(l.crossScaleBytes(0), 1024); // 255 scales, padded
  int64_t sum = 0;
  for (size_t i = 0; i < l.crossLayers.size(); ++i) {
    EXPECT_EQ(l.crossLayerByteBase(i) % 16, 0) << i;
    EXPECT_EQ((l.crossLayerByteBase(i) + 2 * l.crossHalfBytes(i)) % 16, 0) << i;
    sum += l.crossLayerBytes(i);
  }
  EXPECT_EQ(l.crossBytes(), sum);
}

TEST(KvLayout, SharedPromptsLiveInHomesAndBeamsInTheirBranches) {
  KvLayout l = layout(DType::F16, 6, 20); // 2 items x 3 beams
  l.homes = 2;
  l.branchRows = 5;
  l.addLayer(2, 8, 0);
  l.addLayer(2, 8, 3); // a window shorter than a branch: a ring of 3
  EXPECT_EQ(l.layers[0].capacity, 20);
  EXPECT_EQ(l.layers[0].branchCapacity, 5);
  EXPECT_EQ(l.layers[1].capacity, 3);
  EXPECT_EQ(l.layers[1].branchCapacity, 3);
  EXPECT_EQ(l.regions(), 2 + 6);
  EXPECT_EQ(l.branchOf(4), 6);
  // Home 1, head 1, index 7; then slot 4's branch, head 0, index 4, past
  // the homes' 2 x 2 x 20 rows.
  EXPECT_EQ(l.offset(0, 1, 1, 7), ((1 * 2 + 1) * 20 + 7) * 8);
  EXPECT_EQ(l.offset(0, l.branchOf(4), 0, 4), (2 * 2 * 20 + (4 * 2 + 0) * 5 + 4) * 8);
  EXPECT_EQ(l.offset(1, l.branchOf(0), 1, 4), (2 * 2 * 3 + (0 * 2 + 1) * 3 + 1) * 8);
  EXPECT_EQ(l.layerElements(0), (2 * 20 + 6 * 5) * 2 * 8);
  EXPECT_EQ(l.selfBytes(), 2 * 2 * 8 * 2 * ((2 * 20 + 6 * 5) + (2 * 3 + 6 * 3)));
  EXPECT_TRUE(l.verify());
  // Without sharing: a whole sequence a slot, the layout before it.
  const KvLayout u = l.unshared();
  EXPECT_FALSE(u.sharesPrompts());
  EXPECT_EQ(u.selfBytes(), 2 * 6 * 2 * 8 * (20 + 3) * 2);
  EXPECT_EQ(u.offset(0, 5, 1, 19), ((5 * 2 + 1) * 20 + 19) * 8);
  EXPECT_TRUE(u.verify());
  KvLayout shard;
  EXPECT_FALSE(l.sharded(2, shard)) << "tree attention takes the unshared layout";
}

TEST(KvLayout, RefusesEditedSharing) {
  auto shared = [] {
    KvLayout l = layout(DType::F32, 4, 10);
    l.homes = 2;
    l.branchRows = 4;
    l.addLayer(1, 8, 0);
    return l;
  };
  EXPECT_TRUE(shared().verify());
  KvLayout a = shared();
  a.layers[0].branchCapacity = 10; // must be the branch's rows
  EXPECT_FALSE(a.verify());
  KvLayout b = shared();
  b.homes = 5; // more homes than slots
  EXPECT_FALSE(b.verify());
  KvLayout c = shared();
  c.homes = 0; // branches with no home for their prompt
  EXPECT_FALSE(c.verify());
  KvLayout d = shared();
  d.branchRows = 11; // past max length
  d.layers[0].branchCapacity = 11;
  EXPECT_FALSE(d.verify());
  // Shared, it fits; a copy a beam (what an executor that does not share
  // allocates) overflows: refused.
  KvLayout e = layout(DType::F32, 65536, int64_t(1) << 24);
  e.homes = 1;
  e.branchRows = 1;
  e.addLayer(4096, 4096, 0);
  EXPECT_GT(e.selfBytes(), 0);
  EXPECT_LT(e.unshared().selfBytes(), 0);
  EXPECT_FALSE(e.verify());
}

TEST(KvLayout, RefusesOverflowingAndMalformedSizes) {
  KvLayout big = layout(DType::F32, 1 << 20, int64_t(1) << 40);
  big.addLayer(64, 128, 0);
  EXPECT_FALSE(big.verify());
  KvLayout bad = layout(DType::F32, 2, 10);
  bad.addLayer(0, 8, 0);
  EXPECT_FALSE(bad.verify());
  KvLayout edited = layout(DType::F32, 2, 10);
  edited.addLayer(1, 8, 4);
  edited.layers[0].capacity = 10; // must be the window's
  EXPECT_FALSE(edited.verify());
  EXPECT_FALSE(layout(DType::F32, 0, 10).verify());
}

} // namespace

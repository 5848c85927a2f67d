// runtime/KvLayout: the rolling-window rule, the element offsets both
// executors index with, the byte counts genc reports, and refusal of sizes
// that overflow.
#include "runtime/KvLayout.h"

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

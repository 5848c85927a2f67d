// The CPU cache's beam reordering (HostKvCache::copySlots): a destination
// takes its source's rows [from, length) — all of a rolling buffer that has
// wrapped — as they were before the call, whatever else moves in the same
// call (a slot may be a source and a destination), and keeps every other row.
#include "runtime/cpu/KvCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace {

using genrt::DType;
using genrt::cpu::HostKvCache;
using genrt::KvLayout;

// A value naming (layer, K/V, slot, head, position, element), distinct across
// slots for the same row and exact in f16 (at most 200.75).
float mark(size_t l, bool v, int64_t slot, int64_t h, int64_t pos, int64_t e) {
  return float(((((int64_t(l) * 2 + v) * 5 + slot) * 3 + h) * 9 + pos) % 200) + float(e) * 0.25f;
}

void check(DType dt) {
  KvLayout lay;
  lay.dtype = dt;
  lay.slots = 5;
  lay.maxLength = 9;
  lay.addLayer(2, 4, 0); // whole sequence: 9 rows
  lay.addLayer(3, 4, 4); // a rolling window of 4 rows
  HostKvCache c;
  ASSERT_TRUE(HostKvCache::create(lay, c));
  for (size_t l = 0; l < lay.layers.size(); ++l)
    for (bool v : {false, true})
      for (int64_t s = 0; s < lay.slots; ++s)
        for (int64_t h = 0; h < lay.layers[l].kvHeads; ++h)
          for (int64_t p = 0; p < lay.layers[l].capacity; ++p) {
            float row[4];
            for (int64_t e = 0; e < 4; ++e)
              row[e] = mark(l, v, s, h, p, e);
            c.writeSelf(l, v, genrt::KvRef{int32_t(s), int32_t(p)}, h, row);
          }
  // Slots 0 and 1 trade places (both sources and destinations), 2 and 3
  // take slot 0's old rows past 3 and past 0; slot 4 is untouched.
  const std::vector<int32_t> dst = {0, 1, 2, 3}, src = {1, 0, 0, 0};
  const std::vector<int64_t> lengths = {6, 7, 2, 1, 3}; // slot 1: 7 rows, past the window's 4
  const std::vector<int64_t> from = {2, 5, 3, 0};
  c.copySlots(dst, src, lengths, from);
  std::vector<float> scratch;
  for (size_t l = 0; l < lay.layers.size(); ++l) {
    const int64_t cap = lay.layers[l].capacity;
    for (bool v : {false, true})
      for (int64_t s = 0; s < lay.slots; ++s)
        for (int64_t h = 0; h < lay.layers[l].kvHeads; ++h)
          for (int64_t p = 0; p < cap; ++p) {
            int64_t want = s; // the slot whose old row (l, v, h, p) this one holds now
            for (size_t i = 0; i < dst.size(); ++i)
              if (dst[i] == s) {
                const int64_t len = lengths[src[i]];
                const int64_t lo = len > cap ? 0 : std::min(from[i], len), hi = std::min(len, cap);
                if (p >= lo && p < hi)
                  want = src[i];
              }
            const float *row = c.readSelf(l, v, genrt::KvRef{int32_t(s), int32_t(p)}, h, scratch);
            for (int64_t e = 0; e < 4; ++e)
              ASSERT_EQ(row[e], mark(l, v, want, h, p, e))
                  << "layer " << l << (v ? " V" : " K") << " slot " << s << " head " << h << " row " << p;
          }
  }
}

TEST(KvCacheCopy, MovesRowsPastWhatTheBeamsShare) { check(DType::F32); }
TEST(KvCacheCopy, MovesRowsPastWhatTheBeamsShareF16) { check(DType::F16); }

} // namespace

// runtime/KvRows: where each slot's positions live when beams share their
// prompt. The rules (a fresh slot takes a home, the others write their own
// branch, homes stay held while named, refusals change nothing), and one
// property over random beam searches: every slot reads back, through its
// pairs, exactly the history it was given, though no row is ever copied.
#include "runtime/kv/KvRows.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace {

using genrt::KvLayout;
using genrt::KvRef;
using genrt::KvRows;

KvLayout sharedLayout(int64_t batch, int64_t beams, int64_t maxLength, int64_t maxNew, int64_t window = 0) {
  KvLayout l;
  l.slots = batch * beams;
  l.maxLength = maxLength;
  l.homes = batch;
  l.branchRows = maxNew;
  l.addLayer(1, 4, window);
  return l;
}

/// Appends n tokens to each listed slot in one run; false when refused.
bool run(KvRows &rows, const KvRows::Appends &appends) {
  std::vector<KvRef> places;
  if (!rows.place(appends, places))
    return false;
  size_t k = 0;
  for (const auto &[slot, n] : appends)
    for (int64_t i = 0; i < n; ++i)
      rows.append(slot, places[k++]);
  return true;
}

TEST(KvRows, APromptLivesInAHomeAndBeamsWriteTheirOwnBranch) {
  const KvLayout kv = sharedLayout(2, 3, 16, 4);
  KvRows rows(kv);
  ASSERT_TRUE(run(rows, {{0, 5}}));
  for (int64_t p = 0; p < 5; ++p)
    EXPECT_EQ(rows.at(0, p).region, 0) << p;
  EXPECT_EQ(rows.at(0, 4).index, 4);
  rows.copy({1, 2}, {0, 0}); // the beams take the prompt: pairs, no rows
  EXPECT_EQ(rows.of(1).size(), 5u);
  EXPECT_EQ(rows.at(2, 3).region, 0);
  std::vector<KvRef> places;
  ASSERT_TRUE(rows.place({{0, 1}, {1, 1}, {2, 1}}, places));
  EXPECT_EQ(places[0].region, 0); // the owner goes on in its home
  EXPECT_EQ(places[0].index, 5);
  EXPECT_EQ(places[1].region, kv.branchOf(1));
  EXPECT_EQ(places[1].index, 0);
  EXPECT_EQ(places[2].region, kv.branchOf(2));
  EXPECT_EQ(rows.homesInUse(), 1);
}

TEST(KvRows, RefusalsChangeNothing) {
  KvRows rows(sharedLayout(1, 2, 16, 2));
  ASSERT_TRUE(run(rows, {{0, 3}}));
  std::vector<KvRef> places;
  // The one home is held: a second fresh sequence cannot start.
  EXPECT_FALSE(rows.place({{1, 1}}, places));
  rows.copy({1}, {0});
  ASSERT_TRUE(run(rows, {{1, 2}}));
  EXPECT_FALSE(rows.place({{1, 1}}, places)) << "a branch holds max_new_tokens";
  EXPECT_EQ(rows.of(1).size(), 5u);
  // A slot appends once a run (its tokens are one piece there).
  KvRows fresh(sharedLayout(1, 2, 16, 2));
  ASSERT_TRUE(run(fresh, {{0, 3}}));
  fresh.copy({1}, {0});
  EXPECT_FALSE(fresh.place({{1, 1}, {1, 1}}, places));
  EXPECT_EQ(fresh.of(1).size(), 3u);
}

TEST(KvRows, AHomeStaysHeldWhileNamedAndIsReusedOnceFree) {
  KvRows rows(sharedLayout(1, 2, 16, 4));
  ASSERT_TRUE(run(rows, {{0, 3}}));
  rows.copy({1}, {0});
  rows.release(0); // the owner goes; slot 1 still reads the prompt there
  std::vector<KvRef> places;
  EXPECT_FALSE(rows.place({{0, 1}}, places));
  EXPECT_EQ(rows.homesInUse(), 1);
  rows.release(1);
  EXPECT_EQ(rows.homesInUse(), 0);
  ASSERT_TRUE(rows.place({{0, 2}}, places));
  EXPECT_EQ(places[0].region, 0);
  EXPECT_EQ(places[0].index, 0) << "a free home starts over";
}

// Random beam searches over a plan's slots: items start (a fresh slot
// prefills, its beams take the prompt by copy), beams step together, are
// reordered to random parents, finish and are released. A store keyed by
// the rows of each region records what each append wrote; every slot must
// read its own history back through its pairs after every operation.
// A slot's stamp moves exactly when its positions are replaced or
// forgotten, and no two slots or tables share one.
TEST(KvRows, StampsMoveWhenPositionsAreReplaced) {
  const KvLayout kv = sharedLayout(1, 3, 16, 4);
  KvRows rows(kv), other(kv);
  EXPECT_NE(rows.stamp(0), rows.stamp(1));
  EXPECT_NE(rows.stamp(0), other.stamp(0));
  ASSERT_TRUE(run(rows, {{0, 3}}));
  const uint64_t s0 = rows.stamp(0), s1 = rows.stamp(1);
  EXPECT_NE(s0, 0u);
  rows.copy({1, 2}, {0, 0});
  EXPECT_EQ(rows.stamp(0), s0); // appending and being copied from keep it
  EXPECT_NE(rows.stamp(1), s1);
  const uint64_t s2 = rows.stamp(2);
  ASSERT_TRUE(run(rows, {{0, 1}, {1, 1}, {2, 1}}));
  EXPECT_EQ(rows.stamp(2), s2);
  rows.copy({0, 1, 2}, {0, 2, 1}); // 0 keeps its own; 1 and 2 swap
  EXPECT_EQ(rows.stamp(0), s0);
  EXPECT_NE(rows.stamp(1), rows.stamp(2));
  EXPECT_NE(rows.stamp(2), s2);
  const uint64_t s1b = rows.stamp(1);
  rows.release(1);
  EXPECT_NE(rows.stamp(1), s1b);
}

// A reorder that keeps what a slot holds of its parent changes only the
// rest: the pairs say so (unchangedSince), and the kept ones are its own.
TEST(KvRows, AReorderKeepsWhatTheSlotAlreadyHolds) {
  const KvLayout kv = sharedLayout(1, 2, 16, 4);
  KvRows rows(kv);
  ASSERT_TRUE(run(rows, {{0, 3}}));
  rows.copy({1}, {0});
  ASSERT_TRUE(run(rows, {{0, 1}, {1, 1}})); // the beams diverge at position 3
  const uint64_t before = rows.stamp(1);
  EXPECT_EQ(rows.unchangedSince(1, before), 4);
  rows.copy({1}, {0}, {3}); // slot 1 holds the prompt's 3 of slot 0's
  EXPECT_EQ(rows.unchangedSince(1, before), 3);
  EXPECT_EQ(rows.unchangedSince(1, rows.stamp(1)), 4);
  EXPECT_EQ(rows.unchangedSince(1, rows.stamp(0)), 0);
  EXPECT_EQ(rows.at(1, 3).region, 0); // slot 0's token, in slot 0's home
  EXPECT_EQ(rows.at(1, 3).index, 3);
  // Slot 1's branch is named by no pair now: it starts over.
  std::vector<KvRef> places;
  ASSERT_TRUE(rows.place({{1, 1}}, places));
  EXPECT_EQ(places[0].region, kv.branchOf(1));
  EXPECT_EQ(places[0].index, 0);
  rows.copy({1}, {0}, {99}); // more than either holds: clamped, nothing moves
  EXPECT_EQ(rows.at(1, 3).index, 3);
}

TEST(KvRows, EveryBeamReadsItsOwnHistoryThroughRandomReorders) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t batch = 1 + rng() % 3, beams = 2 + rng() % 3, maxNew = 3 + rng() % 6,
                  maxLength = maxNew + 4 + rng() % 6, window = rng() % 3 == 0 ? 2 + rng() % 3 : 0;
    const KvLayout kv = sharedLayout(batch, beams, maxLength, maxNew, window);
    KvRows rows(kv);
    std::map<std::pair<int32_t, int64_t>, int> store; // (region, row) -> value written
    std::vector<std::vector<int>> history(size_t(kv.slots));
    int next = 1;
    auto append = [&](const KvRows::Appends &a) {
      std::vector<KvRef> places;
      if (!rows.place(a, places))
        return false;
      size_t k = 0;
      for (const auto &[slot, n] : a)
        for (int64_t i = 0; i < n; ++i, ++k) {
          const KvRef r = places[k];
          store[{r.region, r.index % kv.regionRows(0, r.region)}] = next;
          history[size_t(slot)].push_back(next++);
          rows.append(slot, r);
        }
      return true;
    };
    // An executor's mirror of the pairs (CudaExecutor::stagePairs): a
    // slot's row rewritten whole when its stamp moved, else only its tail.
    std::vector<std::vector<KvRef>> mirror(size_t(kv.slots), std::vector<KvRef>(size_t(maxLength)));
    std::vector<uint64_t> mirrorStamp(size_t(kv.slots), 0);
    std::vector<size_t> held(size_t(kv.slots), 0);
    auto check = [&](const char *after) {
      for (int32_t s = 0; s < kv.slots; ++s) {
        ASSERT_EQ(rows.of(s).size(), history[size_t(s)].size()) << after;
        size_t &h = held[size_t(s)];
        h = std::min({h, size_t(rows.unchangedSince(s, mirrorStamp[size_t(s)])), rows.of(s).size()});
        std::copy(rows.of(s).begin() + std::ptrdiff_t(h), rows.of(s).end(), mirror[size_t(s)].begin() + std::ptrdiff_t(h));
        mirrorStamp[size_t(s)] = rows.stamp(s);
        h = rows.of(s).size();
        for (size_t p = 0; p < h; ++p)
          ASSERT_TRUE(mirror[size_t(s)][p].region == rows.of(s)[p].region &&
                      mirror[size_t(s)][p].index == rows.of(s)[p].index)
              << after << ": the mirror of slot " << s << " is stale at " << p;
        const int64_t len = int64_t(history[size_t(s)].size());
        // With a window only the last `window` positions are read.
        for (int64_t p = window ? std::max<int64_t>(0, len - window) : 0; p < len; ++p) {
          const KvRef r = rows.at(s, p);
          const int seen = store[{r.region, r.index % kv.regionRows(0, r.region)}];
          ASSERT_EQ(seen, history[size_t(s)][size_t(p)])
              << after << ": trial " << trial << " slot " << s << " position " << p;
        }
      }
    };
    for (int round = 0; round < 4; ++round) {
      for (int64_t i = 0; i < batch; ++i) {
        const int32_t first = int32_t(i * beams);
        for (int64_t b = 0; b < beams; ++b) {
          rows.release(int32_t(first + b));
          history[size_t(first + b)].clear();
        }
        const int64_t prompt = 1 + rng() % (maxLength - maxNew);
        ASSERT_TRUE(append({{first, prompt}}));
        std::vector<int32_t> dst, src;
        for (int64_t b = 1; b < beams; ++b) {
          dst.push_back(int32_t(first + b));
          src.push_back(first);
        }
        rows.copy(dst, src);
        for (int32_t d : dst)
          history[size_t(d)] = history[size_t(first)];
        check("start");
        const int64_t steps = 1 + rng() % maxNew;
        for (int64_t t = 0; t < steps; ++t) {
          KvRows::Appends a;
          for (int64_t b = 0; b < beams; ++b)
            a.push_back({int32_t(first + b), 1});
          ASSERT_TRUE(append(a)) << "trial " << trial << " step " << t;
          check("step");
          // What each destination already holds of its source: their
          // common history (values are unique a write), sometimes less.
          std::vector<int32_t> d, s;
          std::vector<int64_t> keep;
          for (int64_t b = 0; b < beams; ++b) {
            d.push_back(int32_t(first + b));
            s.push_back(int32_t(first + rng() % beams));
            const std::vector<int> &x = history[size_t(d.back())], &y = history[size_t(s.back())];
            int64_t common = 0;
            while (common < int64_t(std::min(x.size(), y.size())) && x[size_t(common)] == y[size_t(common)])
              ++common;
            keep.push_back(rng() % 4 == 0 ? int64_t(rng() % (common + 1)) : common);
          }
          rows.copy(d, s, keep);
          std::vector<std::vector<int>> old = history;
          for (size_t k = 0; k < d.size(); ++k)
            history[size_t(d[k])] = old[size_t(s[k])];
          check("reorder");
        }
      }
    }
  }
}

} // namespace

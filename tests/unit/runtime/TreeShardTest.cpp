// Tree attention's arithmetic on the CPU (runtime/kv/KvLayout.h's shard rule,
// the combine the CUDA kernels attn_N_weigh / attn_N_finish do around their
// two all-reduces): every position lands on exactly one shard, each shard's
// rows are the positions it holds in order, and softmax attention over each
// shard's keys, combined by M = max lse, w = exp(lse - M), Σ w·o / Σ w, is
// attention over all the keys.
#include "runtime/kv/KvLayout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using genrt::DType;
using genrt::KvLayout;
using genrt::Status;

TEST(TreeShard, EveryPositionLivesOnOneShardInOrder) {
  for (int64_t n : {1, 2, 3, 4, 8}) {
    for (int64_t len : {0, 1, 2, 5, 63, 64, 65, 1000}) {
      int64_t total = 0;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t rows = KvLayout::shardRows(len, r, n);
        total += rows;
        int64_t row = 0;
        for (int64_t p = 0; p < len; ++p)
          if (KvLayout::shardOf(p, n) == r) {
            EXPECT_EQ(KvLayout::shardRow(p, n), row) << "n " << n << " p " << p;
            ++row;
          }
        EXPECT_EQ(row, rows) << "n " << n << " r " << r << " len " << len;
      }
      EXPECT_EQ(total, len);
    }
  }
}

TEST(TreeShard, ShardLayoutsHoldMaxLengthAndRefuseRollingWindows) {
  KvLayout l;
  l.dtype = DType::F16;
  l.slots = 2;
  l.maxLength = 1001;
  l.addLayer(4, 64, 0);
  KvLayout s;
  ASSERT_TRUE(l.sharded(2, s));
  EXPECT_EQ(s.layers[0].capacity, 501); // ceil(1001 / 2): shard 0 holds the odd count
  EXPECT_EQ(s.shards, 2);
  EXPECT_TRUE(s.verify());
  EXPECT_EQ(s.selfBytes(), 2 * 2 * 4 * 501 * 64 * 2);
  EXPECT_FALSE(s.sharded(2, s)); // a shard is not sharded again
  EXPECT_FALSE(l.sharded(0, s));
  l.addLayer(4, 64, 128); // a sliding window: a rolling buffer
  Status why = l.sharded(2, s);
  EXPECT_FALSE(why);
  EXPECT_NE(why.message().find("layer 1"), std::string::npos) << why.message();
  ASSERT_TRUE(l.sharded(1, s)) << "one shard of a rolling window is itself";
}

// Attention of one query over keys `keys` (positions) of K, V [L, D]:
// the output (normalised) and its log-sum-exp (-inf: no keys).
void attend(const std::vector<float> &q, const std::vector<float> &K, const std::vector<float> &V, int64_t D,
            const std::vector<int64_t> &keys, std::vector<float> &out, float &lse) {
  out.assign(D, 0.f);
  if (keys.empty()) {
    lse = -std::numeric_limits<float>::infinity();
    return;
  }
  std::vector<double> s;
  double m = -1e300;
  for (int64_t j : keys) {
    double d = 0;
    for (int64_t i = 0; i < D; ++i)
      d += double(q[i]) * K[j * D + i];
    s.push_back(d / std::sqrt(double(D)));
    m = std::max(m, s.back());
  }
  double l = 0;
  std::vector<double> o(D, 0.0);
  for (size_t k = 0; k < keys.size(); ++k) {
    const double w = std::exp(s[k] - m);
    l += w;
    for (int64_t i = 0; i < D; ++i)
      o[i] += w * V[keys[k] * D + i];
  }
  for (int64_t i = 0; i < D; ++i)
    out[i] = static_cast<float>(o[i] / l);
  lse = static_cast<float>(m + std::log(l));
}

TEST(TreeShard, CombinedShardsAreAttentionOverAllKeys) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 2.f);
  const int64_t D = 16;
  for (int64_t n : {1, 2, 3, 4}) {
    for (int64_t len : {1, 2, 3, 17, 200}) {
      std::vector<float> q(D), K(len * D), V(len * D);
      for (float &x : q) x = g(rng);
      for (float &x : K) x = g(rng);
      for (float &x : V) x = g(rng);
      std::vector<int64_t> all;
      for (int64_t p = 0; p < len; ++p) all.push_back(p);
      std::vector<float> ref;
      float refLse = 0;
      attend(q, K, V, D, all, ref, refLse);
      // Each shard over its own positions; then the combine.
      std::vector<std::vector<float>> o(n);
      std::vector<float> lse(n);
      for (int64_t r = 0; r < n; ++r) {
        std::vector<int64_t> mine;
        for (int64_t p = 0; p < len; ++p)
          if (KvLayout::shardOf(p, n) == r) mine.push_back(p);
        attend(q, K, V, D, mine, o[r], lse[r]);
      }
      float M = -std::numeric_limits<float>::infinity();
      for (float x : lse) M = std::max(M, x);              // AllReduce_max
      std::vector<float> packed(D + 1, 0.f);                // AllReduce_sum of [w·o | w]
      for (int64_t r = 0; r < n; ++r) {
        const float w = std::isinf(lse[r]) ? 0.f : std::exp(lse[r] - M);
        for (int64_t i = 0; i < D; ++i) packed[i] += w * o[r][i];
        packed[D] += w;
      }
      for (int64_t i = 0; i < D; ++i)
        EXPECT_NEAR(packed[i] / packed[D], ref[i], 1e-5f * (1 + std::fabs(ref[i]))) << "n " << n << " len " << len;
      EXPECT_NEAR(M + std::log(packed[D]), refLse, 1e-4f);
    }
  }
}

} // namespace

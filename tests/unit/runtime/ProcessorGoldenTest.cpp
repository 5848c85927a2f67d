// search/LogitsProcessors against Hugging Face's own processor classes:
// tests/unit/runtime/ProcessorGolden.inc holds rows of scores and what HF's
// processors return for them (tools/make_processor_golden.py), bit for bit.
#include "runtime/search/LogitsProcessors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace genrt::search;

struct Golden {
  std::string name;
  std::vector<int64_t> args;
  int64_t curLen;
  std::vector<uint32_t> scores, want;
};

const Golden kCases[] = {
#include "ProcessorGolden.inc"
};

float asFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(ProcessorGolden, EveryRowAsHuggingFaceReturnsIt) {
  int checked = 0;
  for (const Golden &g : kCases) {
    std::vector<float> row;
    for (uint32_t u : g.scores)
      row.push_back(asFloat(u));
    const int64_t V = static_cast<int64_t>(row.size());
    const std::vector<int64_t> &a = g.args;
    if (g.name == "suppress") {
      applySuppressTokens(row.data(), V, a);
    } else if (g.name == "begin_suppress") { // ids..., begin index
      applyBeginSuppressTokens(row.data(), V, {a.begin(), a.end() - 1}, g.curLen, a.back());
    } else if (g.name == "forced_eos") { // eos..., max length
      applyForcedEos(row.data(), V, {a.begin(), a.end() - 1}, g.curLen, a.back());
    } else if (g.name == "min_length") { // eos..., min length
      applyMinLength(row.data(), V, {a.begin(), a.end() - 1}, g.curLen, a.back());
    } else if (g.name == "forced_bos") {
      applyForcedBos(row.data(), V, a[0], g.curLen);
    } else if (g.name == "exp_decay") { // eos..., regulation start, factor x 10
      applyExponentialDecayLengthPenalty(row.data(), V, {a.begin(), a.end() - 2}, g.curLen, a[a.size() - 2],
                                         a.back() / 10.0);
    } else {
      FAIL() << "unknown golden case " << g.name;
    }
    for (int64_t v = 0; v < V; ++v) {
      uint32_t got;
      std::memcpy(&got, &row[v], 4);
      ASSERT_EQ(got, g.want[v]) << g.name << " at cur_len " << g.curLen << ", token " << v << ": got " << row[v]
                                << ", HF " << asFloat(g.want[v]);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 17); // 4 processors x 3 lengths, forced BOS x 2, decay x 3
}

} // namespace

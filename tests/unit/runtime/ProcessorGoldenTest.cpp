// search/LogitsProcessors against Hugging Face's own processor classes:
// tests/unit/runtime/ProcessorGolden.inc holds rows of scores and what HF's
// processors return for them (tests/unit/runtime/make_processor_golden.py), bit for bit.
#include "runtime/search/LogitsProcessors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

std::vector<float> asRow(const std::vector<uint32_t> &bits) {
  std::vector<float> row;
  for (uint32_t u : bits)
    row.push_back(asFloat(u));
  return row;
}

TEST(ProcessorGolden, EveryRowAsHuggingFaceReturnsIt) {
  int checked = 0;
  for (const Golden &g : kCases) {
    std::vector<float> row = asRow(g.scores);
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

struct Golden2 {
  std::string name;
  std::vector<int64_t> history, ints;
  std::vector<double> floats;
  std::vector<uint32_t> scores, want;
};

const Golden2 kCases2[] = {
#include "ProcessorGolden2.inc"
};

// ints: for each sequence its length then its ids.
std::vector<std::vector<int64_t>> sequences(const std::vector<int64_t> &ints, size_t &at, size_t count) {
  std::vector<std::vector<int64_t>> out;
  for (size_t k = 0; k < count; ++k) {
    const int64_t n = ints[at++];
    out.emplace_back(ints.begin() + at, ints.begin() + at + n);
    at += n;
  }
  return out;
}

TEST(ProcessorGolden, HistoryBiasAndWarpersAsHuggingFaceReturnsThem) {
  int checked = 0;
  for (const Golden2 &g : kCases2) {
    std::vector<float> row = asRow(g.scores);
    const int64_t V = static_cast<int64_t>(row.size());
    size_t at = 0;
    if (g.name == "sequence_bias") {
      auto seqs = sequences(g.ints, at, g.floats.size());
      std::vector<std::pair<std::vector<int64_t>, float>> bias;
      for (size_t k = 0; k < seqs.size(); ++k)
        bias.emplace_back(seqs[k], float(g.floats[k]));
      applySequenceBias(row.data(), V, g.history, bias);
    } else if (g.name == "bad_words") { // sequences..., then the eos id
      size_t count = 0;
      for (size_t i = 0; i + 1 < g.ints.size(); i += size_t(g.ints[i]) + 1)
        ++count;
      auto seqs = sequences(g.ints, at, count);
      applyBadWords(row.data(), V, g.history, seqs, {g.ints.back()});
    } else if (g.name == "typical") {
      applyTypicalP(row.data(), V, g.floats[0]);
    } else if (g.name == "epsilon") {
      applyEpsilonCutoff(row.data(), V, g.floats[0]);
    } else if (g.name == "eta") {
      applyEtaCutoff(row.data(), V, g.floats[0]);
    } else if (g.name == "renormalize") {
      logSoftmax(row.data(), V);
    } else if (g.name == "encoder_repetition") { // ints: the encoder's ids
      applyEncoderRepetitionPenalty(row.data(), V, g.ints, g.floats[0]);
    } else if (g.name == "encoder_no_repeat") { // ints: n, then the encoder's ids
      applyEncoderNoRepeatNgram(row.data(), V, g.history, {g.ints.begin() + 1, g.ints.end()}, g.ints[0]);
    } else {
      FAIL() << "unknown golden case " << g.name;
    }
    for (int64_t v = 0; v < V; ++v) {
      const float want = asFloat(g.want[v]);
      if (g.name == "renormalize" && !std::isinf(want)) // torch's log_softmax rounds its own way
        EXPECT_NEAR(row[v], want, 1e-5f * std::max(1.f, std::fabs(want))) << g.name << " token " << v;
      else if (std::isinf(want) || std::isinf(row[v]))
        EXPECT_EQ(row[v], want) << g.name << " token " << v;
      else
        EXPECT_EQ(row[v], want) << g.name << " token " << v;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 16);
}

} // namespace

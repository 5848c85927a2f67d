// Prompt sets for the search tests, in both the runtime's and the
// reference's form.
#pragma once
#include "FakeDecoder.h"
#include "ReferenceSearch.h"
#include "runtime/search/Generate.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace testutil {

struct Prompts {
  std::vector<genrt::Prompt> prompts;
  std::vector<ref::Input> inputs;
};

/// `count` prompts of 1..maxLen tokens drawn from [3, vocab). With leftPad,
/// every prompt is left-padded with pad id 0 to the longest, HF style, and
/// carries the attention mask. With encoderDecoder, the prompts are sources
/// and the decoder starts from token 0.
inline Prompts makePrompts(uint64_t seed, int count, int64_t vocab, int maxLen = 6, bool leftPad = false,
                           bool encoderDecoder = false) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> raw;
  size_t longest = 0;
  for (int i = 0; i < count; ++i) {
    int len = 1 + int(rng() % uint64_t(maxLen));
    std::vector<int64_t> ids;
    for (int k = 0; k < len; ++k)
      ids.push_back(3 + int64_t(rng() % uint64_t(vocab - 3)));
    longest = std::max(longest, ids.size());
    raw.push_back(ids);
  }
  Prompts p;
  for (auto &ids : raw) {
    genrt::Prompt pr;
    ref::Input in;
    if (leftPad) {
      size_t padN = longest - ids.size();
      pr.inputIds.assign(padN, 0);
      pr.attentionMask.assign(padN, 0);
      pr.inputIds.insert(pr.inputIds.end(), ids.begin(), ids.end());
      pr.attentionMask.insert(pr.attentionMask.end(), ids.size(), 1);
    } else {
      pr.inputIds = ids;
    }
    if (encoderDecoder) {
      in.source = ids;
      in.inputIds = {0};
      in.modelPrompt = {0};
    } else {
      in.inputIds = pr.inputIds;
      in.modelPrompt = ids;
    }
    p.prompts.push_back(pr);
    p.inputs.push_back(in);
  }
  return p;
}

inline std::string str(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

/// Expects generate()'s results to equal the reference's, token for token.
inline void expectSame(const std::vector<genrt::GenerationResult> &got, const ref::Run &want, float scoreTol,
                       const std::string &what) {
  ASSERT_EQ(got.size(), want.items.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sequences.size(), want.items[i].sequences.size()) << what << " item " << i;
    for (size_t k = 0; k < got[i].sequences.size(); ++k) {
      EXPECT_EQ(str(got[i].sequences[k].outputIds), str(want.items[i].sequences[k]))
          << what << " item " << i << " seq " << k;
      EXPECT_NEAR(got[i].sequences[k].score, want.items[i].scores[k],
                  scoreTol * std::max(1.0, std::abs(double(want.items[i].scores[k]))))
          << what << " item " << i << " seq " << k;
    }
  }
}

} // namespace testutil

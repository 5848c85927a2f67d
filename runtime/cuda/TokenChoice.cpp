// The host side of the token-choice kernels (TokenChoice.h): the passes a
// rule needs, the rows' rules staged, the launches, and the token check.
#include "runtime/cuda/TokenChoice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace genrt::cuda {

namespace {
int flagsOf(const SampleRule &rule, int64_t vocab) {
  int f = 0;
  if (rule.sample) {
    f |= kTokSample;
    if (rule.temperature != 1.f)
      f |= kTokTemperature;
    if (rule.topK > 0 && rule.topK < vocab)
      f |= kTokTopK;
    if (rule.topP < 1.0)
      f |= kTokTopP;
    if (rule.minP > 0.f)
      f |= kTokMinP;
  }
  return f;
}
} // namespace

uint32_t tokenPasses(const SampleRule &rule, int64_t vocab) {
  const int f = flagsOf(rule, vocab);
  uint32_t m = 1u << kTokPrep;
  if (!(f & kTokSample))
    return m;
  if (f & kTokTopK)
    m |= 7u << kTokTopK0;
  if (f & kTokTopP)
    m |= (1u << kTokSumK) | (7u << kTokTopP0) | (3u << kTokIdx0);
  if (f & kTokMinP)
    m |= 1u << kTokSumP;
  return m | 1u << kTokDraw;
}

int64_t editWords(const BeamRow &b) {
  return static_cast<int64_t>(2 * b.biased.size() + b.encoderPenalized.size() + b.penalized.size() +
                              b.forced.size() + b.decayed.size() + b.banned.size());
}

void stageEdits(const BeamRow &b, GencEdits &e, int32_t *list, int32_t &at) {
  auto put = [&](const std::vector<int32_t> &v, int &begin, int &end) {
    begin = at;
    std::copy(v.begin(), v.end(), list + at);
    at += static_cast<int32_t>(v.size());
    end = at;
  };
  e = GencEdits{};
  e.encoderPenalty = b.encoderPenalized.empty() ? 1.f : b.encoderPenalty;
  e.penalty = b.penalized.empty() ? 1.f : b.penalty;
  e.decayScale = b.decayScale;
  e.force = b.force;
  e.biasBegin = at;
  for (const auto &[t, bias] : b.biased) {
    list[at++] = t;
    std::memcpy(&list[at++], &bias, 4);
  }
  e.biasEnd = at;
  put(b.encoderPenalized, e.encBegin, e.encEnd);
  put(b.penalized, e.penBegin, e.penEnd);
  put(b.forced, e.forcedBegin, e.forcedEnd);
  put(b.decayed, e.decayBegin, e.decayEnd);
  put(b.banned, e.banBegin, e.banEnd);
}

bool stageTokenRows(const std::vector<BeamRow> &rows, const std::vector<double> &draws, const SampleRule &rule,
                    int64_t vocab, int64_t idsCap, void *staging, int64_t &ids) {
  const int64_t R = static_cast<int64_t>(rows.size());
  ids = 0;
  for (const BeamRow &b : rows)
    ids += editWords(b);
  if (ids > idsCap)
    return false;
  GencTokenRow *rule0 = static_cast<GencTokenRow *>(staging);
  int32_t *list = reinterpret_cast<int32_t *>(rule0 + R);
  int32_t at = 0;
  const int flags = flagsOf(rule, vocab);
  for (int64_t r = 0; r < R; ++r) {
    GencTokenRow &g = rule0[r];
    g = GencTokenRow{};
    g.u = draws[r];
    stageEdits(rows[r], g.e, list, at);
    g.temperature = rule.temperature;
    g.topPThreshold = float(1.0 - rule.topP);
    g.minP = rule.minP;
    g.topK = rule.topK;
    g.flags = flags;
  }
  return true;
}

Status launchTokenPasses(const Device &dev, CUfunction fn, CUstream stream, GencTokenParams p, uint32_t passes,
                         int64_t parts) {
  static const char *const names[kTokPasses] = {
      "genc_token_pass (prep)",   "genc_token_pass (top-k 1)", "genc_token_pass (top-k 2)",
      "genc_token_pass (top-k 3)", "genc_token_pass (sum)",     "genc_token_pass (top-p 1)",
      "genc_token_pass (top-p 2)", "genc_token_pass (top-p 3)", "genc_token_pass (top-p tie 1)",
      "genc_token_pass (top-p tie 2)", "genc_token_pass (min-p)", "genc_token_pass (draw)"};
  for (int pass = 0; pass < kTokPasses; ++pass) {
    if (!(passes >> pass & 1u))
      continue;
    p.pass = pass;
    void *args[] = {&p};
    if (Status s = dev.launch(fn, static_cast<unsigned>(p.rows), static_cast<unsigned>(parts), 1, 256, 1, 0, stream,
                              args, names[pass]);
        !s)
      return s;
  }
  return Status::ok();
}

void TokenCheck::check(const float *logits, int64_t vocab, const std::vector<BeamRow> &rows,
                       const std::vector<double> &draws, const SampleRule &rule, const int64_t *tokens,
                       const float *logprobs) {
  std::vector<float> row(static_cast<size_t>(vocab));
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(logits + r * vocab, vocab, row.data());
    int64_t want;
    float lp;
    chooseToken(row.data(), vocab, rows[r], rule, draws[r], want, lp);
    ++this->rows;
    const int64_t got = tokens[r];
    if (got != want) {
      ++differ;
      if (differ <= 5)
        std::fprintf(stderr, "genrun: token check: row %zu: device %lld, host %lld (u %.17g)\n", r,
                     static_cast<long long>(got), static_cast<long long>(want), draws[r]);
    }
    if (got < 0 || got >= vocab || row[size_t(got)] == -std::numeric_limits<float>::infinity())
      ++outside;
    else if (got == want)
      maxLogprobDiff = std::max(maxLogprobDiff, std::fabs(double(logprobs[r]) - double(lp)));
  }
}

void TokenCheck::report() const {
  std::fprintf(stderr,
               "genrun: token check: %lld rows, %lld tokens differ from the host reference, %lld outside its "
               "support, max |logprob diff| %.3g\n",
               static_cast<long long>(rows), static_cast<long long>(differ), static_cast<long long>(outside),
               maxLogprobDiff);
}

} // namespace genrt::cuda

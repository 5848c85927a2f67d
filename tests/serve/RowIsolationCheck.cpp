// genc_row_check PLAN...: on the CPU executor, a row's logits must be the
// same bits whatever else shares its forward and however its prompt was
// split — what the server's continuous batching relies on for a request's
// greedy tokens to match genrun's batch mode (docs/serving.md).
//
// For each plan: a prompt run alone (one forward, then one token a step)
// against the same prompt split into pieces across steps, packed with other
// slots' prompt pieces and decode tokens (so its rows run in @prefill runs
// of many tokens and in @decode_step runs of several rows), every step's
// logits compared bit for bit. Prints the first differing value and exits
// 1, or one line per plan and exits 0.
#include "runtime/Runtime.h"
#include "tests/serve/SeededTokens.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace genrt;

namespace {

std::vector<int64_t> tokens(int64_t n, int64_t seed, int64_t vocab) {
  return genc_tests::seededTokens(n, uint64_t(seed), vocab);
}

int64_t argmax(const float *row, int64_t v) {
  int64_t b = 0;
  for (int64_t i = 1; i < v; ++i)
    if (row[i] > row[b])
      b = i;
  return b;
}

// The logits of every chunk (each asks for output), [chunks, vocab].
Status forwardLogits(Decoder &dec, const std::vector<Chunk> &chunks, std::vector<float> &out) {
  ChoiceAnswer answer;
  Status s = dec.forward(chunks, ChoiceRequest::logits(), answer);
  out = std::move(answer.logits);
  return s;
}

bool fail(const std::string &m) {
  std::fprintf(stderr, "genc_row_check: %s\n", m.c_str());
  return false;
}

bool checkPlan(const std::string &path) {
  OpenedPlan opened;
  if (Status s = openPlan(path, "cpu", opened); !s)
    return fail(s.message());
  Decoder *dec = opened.decoder.get();
  const ModelInfo &info = dec->info();
  const int64_t V = info.vocabSize, steps = 6;
  if (dec->maxSlots() < 4)
    return fail(path + ": needs a plan of at least 4 slots");
  const int64_t P = std::min<int64_t>(37, info.maxLength - steps - 1);
  const std::vector<int64_t> prompt = tokens(P, 7, V);

  // Alone: the whole prompt in one forward, then one token a step.
  std::vector<std::vector<float>> alone;
  std::vector<int64_t> fed;
  for (int32_t s = 0; s < dec->maxSlots(); ++s)
    dec->resetSlot(s);
  std::vector<float> row(static_cast<size_t>(V), 0.f);
  if (Status s = forwardLogits(*dec, {Chunk{0, prompt}}, row); !s)
    return fail(s.message());
  alone.push_back(row);
  for (int64_t t = 0; t < steps; ++t) {
    fed.push_back(argmax(row.data(), V));
    if (Status s = forwardLogits(*dec, {Chunk{0, {fed.back()}}}, row); !s)
      return fail(s.message());
    alone.push_back(row);
  }

  // Mixed: the prompt in three pieces in slot 2, among other slots' work.
  for (int32_t s = 0; s < dec->maxSlots(); ++s)
    dec->resetSlot(s);
  const int64_t a = P / 3, b = 2 * P / 3;
  std::vector<std::vector<Chunk>> plan = {
      {Chunk{0, tokens(23, 1, V)}, Chunk{2, {prompt.begin(), prompt.begin() + a}}, Chunk{3, tokens(5, 3, V)}},
      {Chunk{3, tokens(1, 4, V)}, Chunk{2, {prompt.begin() + a, prompt.begin() + b}}, Chunk{1, tokens(11, 5, V)}},
      {Chunk{1, tokens(1, 6, V)}, Chunk{0, tokens(1, 8, V)}, Chunk{2, {prompt.begin() + b, prompt.end()}},
       Chunk{3, tokens(1, 9, V)}},
  };
  std::vector<float> logits;
  std::vector<std::vector<float>> mixed;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (Status s = forwardLogits(*dec, plan[k], logits); !s)
      return fail(s.message());
  }
  const float *mine = logits.data() + 2 * V; // slot 2's chunk is third in the last step
  mixed.emplace_back(mine, mine + V);
  for (int64_t t = 0; t < steps; ++t) {
    // Decode steps of 2, 3 and 4 rows, and one beside a new prompt (@prefill).
    std::vector<Chunk> cs;
    if (t % 2 == 0)
      cs.push_back(Chunk{1, tokens(1, 20 + t, V)});
    cs.push_back(Chunk{2, {fed[size_t(t)]}});
    if (t == 3) {
      dec->resetSlot(3);
      cs.push_back(Chunk{3, tokens(9, 40, V)});
    } else if (t % 3 != 2) {
      cs.push_back(Chunk{0, tokens(1, 30 + t, V)});
    }
    if (Status s = forwardLogits(*dec, cs, logits); !s)
      return fail(s.message());
    const size_t at = t % 2 == 0 ? 1 : 0;
    mine = logits.data() + at * size_t(V);
    mixed.emplace_back(mine, mine + V);
  }

  for (size_t k = 0; k < alone.size(); ++k)
    for (int64_t v = 0; v < V; ++v)
      if (std::memcmp(&alone[k][size_t(v)], &mixed[k][size_t(v)], sizeof(float)) != 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s: step %zu, logit %lld: alone %.9g, mixed %.9g", path.c_str(), k,
                      (long long)v, alone[k][size_t(v)], mixed[k][size_t(v)]);
        return fail(buf);
      }
  std::printf("%s: %zu steps of %lld logits identical alone and mixed\n", path.c_str(), alone.size(), (long long)V);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: genc_row_check PLAN...\n");
    return 2;
  }
  bool ok = true;
  for (int i = 1; i < argc; ++i)
    ok = checkPlan(argv[i]) && ok;
  return ok ? 0 : 1;
}

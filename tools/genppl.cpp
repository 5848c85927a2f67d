// genppl: the perplexity of a plan's model on a text, through the runtime
// (the executor genrun uses), for the quality figures of docs/quantization.md.
//
//   genppl PLAN (--ids IDS.json | --text FILE) [--window W] [--steps [--rows R]]
//          [--max-tokens N] [--device cpu|cuda|auto] [--threads N]
//
// The token ids (a JSON array, or FILE's text through the plan's tokenizer)
// are cut into consecutive windows of W tokens (the last one shorter), each
// an independent sequence: token t + 1 of a window is predicted from tokens
// 0..t of the same window, as Hugging Face's forward pass of that window
// predicts it (tests/tools/perplexity_hf.py computes the same numbers with
// transformers). A window runs as a prompt whose every token gives its
// logits (the plan's prefill, the path of genrun serve's prompt
// log-probabilities; at most the plan's max-batch x max-beams rows a run);
// --steps runs R windows together one token a step each instead (the decode
// step's path; the same figures to the digits printed). Prints the
// tokens, the predictions scored, the mean negative log-likelihood (nats)
// and its exponential, the perplexity; errors are one line, exit 1.
#include "runtime/json/Json.h"
#include "runtime/Runtime.h"
#include "runtime/search/PromptScores.h"
#include "runtime/text/PlanTokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace genrt;

namespace {

[[noreturn]] void fail(const std::string &msg) {
  std::fprintf(stderr, "genppl: error: %s\n", msg.c_str());
  std::exit(1);
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    fail("cannot read '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int64_t number(const char *flag, const char *v, int64_t lo, int64_t hi) {
  char *end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (!*v || *end || n < lo || n > hi)
    fail(std::string(flag) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
         " (got '" + v + "')");
  return n;
}

} // namespace

int main(int argc, char **argv) {
  std::string plan, idsFile, textFile, device = "auto";
  int64_t window = 512, rows = 8, maxTokens = 0, threads = 0;
  bool steps = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--ids")
      idsFile = value();
    else if (a == "--text")
      textFile = value();
    else if (a == "--window")
      window = number("--window", value(), 2, int64_t(1) << 20);
    else if (a == "--rows")
      rows = number("--rows", value(), 1, 4096);
    else if (a == "--max-tokens")
      maxTokens = number("--max-tokens", value(), 2, int64_t(1) << 30);
    else if (a == "--threads")
      threads = number("--threads", value(), 0, 1024);
    else if (a == "--device")
      device = value();
    else if (a == "--steps")
      steps = true;
    else if (!a.empty() && a[0] != '-' && plan.empty())
      plan = a;
    else
      fail("unknown argument '" + a + "' (genppl PLAN (--ids IDS.json | --text FILE) [--window W] "
                                      "[--steps [--rows R]] [--max-tokens N] [--device D] [--threads N])");
  }
  if (plan.empty() || idsFile.empty() == textFile.empty())
    fail("give a plan and one of --ids or --text");

  ExecutorOptions opts;
  opts.threads = static_cast<int>(threads);
  OpenedPlan opened;
  if (Status s = openPlan(plan, device, opened, opts); !s)
    fail(s.message());
  std::unique_ptr<Decoder> &dec = opened.decoder;

  std::vector<int64_t> ids;
  if (!idsFile.empty()) {
    json::Value v;
    if (Status s = json::parse(readFile(idsFile), v); !s)
      fail(idsFile + ": " + s.message());
    if (!v.isArray())
      fail(idsFile + ": not a JSON array of token ids");
    for (const json::Value &x : v.items()) {
      if (!x.isInteger())
        fail(idsFile + ": not a JSON array of token ids");
      ids.push_back(x.asInt());
    }
  } else if (Status s = text::encodePrompt(opened.tokenizer.get(), readFile(textFile), "give --ids", ids); !s) {
    fail(textFile + ": " + s.message());
  }
  if (maxTokens && static_cast<int64_t>(ids.size()) > maxTokens)
    ids.resize(static_cast<size_t>(maxTokens));
  if (ids.size() < 2)
    fail("fewer than 2 tokens");

  const int64_t vocab = dec->info().vocabSize;
  if (window > dec->info().maxLength)
    fail("--window " + std::to_string(window) + " is longer than the plan's max length " +
         std::to_string(dec->info().maxLength));
  for (int64_t id : ids)
    if (id < 0 || id >= vocab)
      fail("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  rows = std::min<int64_t>(rows, dec->maxSlots());

  std::vector<std::pair<int64_t, int64_t>> windows; // [start, end) of each
  for (int64_t s = 0; s + 1 < static_cast<int64_t>(ids.size()); s += window)
    windows.push_back({s, std::min<int64_t>(s + window, static_cast<int64_t>(ids.size()))});
  double nll = 0;
  int64_t scored = 0;
  const ChoiceRequest request = ChoiceRequest::logits();
  ChoiceAnswer answer;
  // row's log-softmax at `next`, added up.
  auto score = [&](const float *l, int64_t next) {
    nll -= double(search::scoreRow(l, vocab, next, 0).logprob);
    ++scored;
  };
  auto t0 = std::chrono::steady_clock::now();
  // Each window as a prompt whose every token gives its row: the plan's
  // prefill, at most its rows a run (runtime/search/PromptScores.h).
  std::vector<search::TokenScore> scores;
  for (size_t w = 0; !steps && w < windows.size(); ++w) {
    scores.clear();
    if (Status s = search::scorePrompt(*dec, 0, std::vector<int64_t>(ids.begin() + windows[w].first,
                                                                     ids.begin() + windows[w].second),
                                       0, scores);
        !s)
      fail(s.message());
    for (const search::TokenScore &sc : scores)
      nll -= double(sc.logprob);
    scored += static_cast<int64_t>(scores.size());
  }
  for (size_t w0 = 0; steps && w0 < windows.size(); w0 += static_cast<size_t>(rows)) {
    const size_t w1 = std::min(windows.size(), w0 + static_cast<size_t>(rows));
    for (size_t w = w0; w < w1; ++w)
      dec->resetSlot(static_cast<int32_t>(w - w0));
    for (int64_t t = 0;; ++t) {
      std::vector<Chunk> chunks;
      std::vector<int64_t> next;
      for (size_t w = w0; w < w1; ++w)
        if (windows[w].first + t < windows[w].second) {
          chunks.push_back({static_cast<int32_t>(w - w0), {ids[windows[w].first + t]}});
          next.push_back(windows[w].first + t + 1 < windows[w].second ? ids[windows[w].first + t + 1] : -1);
        }
      if (chunks.empty())
        break;
      if (Status s = dec->forward(chunks, request, answer); !s)
        fail(s.message());
      for (size_t c = 0; c < chunks.size(); ++c) {
        if (next[c] < 0)
          continue;
        score(answer.logits.data() + c * vocab, next[c]);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu tokens in %zu windows of %lld, %lld predictions: nll %.6f nats/token, perplexity %.4f "
              "(%s, %.1f s)\n",
              ids.size(), windows.size(), static_cast<long long>(window), static_cast<long long>(scored), nll / scored,
              std::exp(nll / scored), dec->deviceName().c_str(), seconds);
  return 0;
}

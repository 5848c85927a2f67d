// gpucheck --prefill-graphs (PrefillGraphsCheck.h).
#include "PrefillGraphsCheck.h"

#include "runtime/Runtime.h"
#include "tests/serve/SeededTokens.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpucheck {
namespace {

using genrt::ChoiceAnswer;
using genrt::ChoiceRequest;
using genrt::Chunk;
using genrt::Status;
using genc_tests::seededTokens;

// The schedule's logits, step after step, on a decoder opened with the
// graphs on or off; `report` gets the decoder's choice report.
Status runSchedule(const std::string &path, bool graphs, std::vector<std::vector<float>> &steps,
                   std::string &report) {
  setenv("GENC_CUDA_PREFILL_GRAPHS", graphs ? "1" : "0", 1);
  genrt::OpenedPlan opened;
  if (Status s = genrt::openPlan(path, "cuda", opened); !s)
    return s;
  genrt::Decoder &dec = *opened.decoder;
  const int64_t V = dec.info().vocabSize, L = dec.info().maxLength;
  if (dec.maxSlots() < 4)
    return Status::error("needs a plan of at least 4 slots");
  // Pieces of P tokens: 6 a prompt, and room for the decode rows' tokens.
  const int64_t P = std::min<int64_t>(13, (L - 16) / 7);
  if (P < 2)
    return Status::error("needs a plan of at least 30 positions");
  auto forward = [&](const std::vector<Chunk> &chunks) -> Status {
    ChoiceAnswer answer;
    if (Status s = dec.forward(chunks, ChoiceRequest::logits(), answer); !s)
      return s;
    steps.push_back(std::move(answer.logits));
    return Status::ok();
  };
  for (int32_t s = 0; s < dec.maxSlots(); ++s)
    dec.resetSlot(s);
  if (Status s = forward({Chunk{0, seededTokens(5, 1, V)}, Chunk{1, seededTokens(4, 2, V)},
                          Chunk{2, seededTokens(3, 3, V)}});
      !s)
    return s;
  // Two prompts in slot 3, one after the other, each in 6 pieces beside the
  // three decode rows: 12 runs of one shape (3 + P tokens, 4 logit rows).
  uint64_t seed = 100;
  for (int prompt = 0; prompt < 2; ++prompt) {
    dec.resetSlot(3);
    const std::vector<int64_t> p = seededTokens(6 * P, 50 + prompt, V);
    for (int64_t piece = 0; piece < 6; ++piece) {
      std::vector<Chunk> cs;
      for (int32_t slot = 0; slot < 3; ++slot)
        cs.push_back(Chunk{slot, seededTokens(1, seed++, V)});
      cs.push_back(Chunk{3, {p.begin() + piece * P, p.begin() + (piece + 1) * P}});
      if (Status s = forward(cs); !s)
        return s;
    }
  }
  report = dec.choiceReport();
  return Status::ok();
}

} // namespace

bool checkPrefillGraphs(const std::string &path) {
  std::vector<std::vector<float>> off, on;
  std::string offReport, onReport;
  Status s = runSchedule(path, false, off, offReport);
  if (s)
    s = runSchedule(path, true, on, onReport);
  unsetenv("GENC_CUDA_PREFILL_GRAPHS");
  if (!s) {
    std::printf("%s: prefill graphs: %s  FAIL\n", path.c_str(), s.message().c_str());
    return false;
  }
  const size_t at = onReport.find("@prefill graphs: ");
  long long captured = -1, replayed = -1;
  if (at != std::string::npos)
    std::sscanf(onReport.c_str() + at, "@prefill graphs: %lld captured, %lld replayed", &captured, &replayed);
  // The first piece of each shape runs kernel by kernel, the second captures, the rest replay.
  if (captured < 1 || replayed < 8) {
    std::printf("%s: prefill graphs: %lld captured, %lld replayed where 12 runs of one shape should replay 10 (%s)  FAIL\n",
                path.c_str(), captured, replayed, onReport.c_str());
    return false;
  }
  size_t values = 0;
  for (size_t k = 0; k < off.size(); ++k) {
    if (k >= on.size() || on[k].size() != off[k].size()) {
      std::printf("%s: prefill graphs: step %zu gave %zu logits with the graphs, %zu without  FAIL\n", path.c_str(), k,
                  k < on.size() ? on[k].size() : size_t(0), off[k].size());
      return false;
    }
    for (size_t v = 0; v < off[k].size(); ++v)
      if (std::memcmp(&off[k][v], &on[k][v], sizeof(float)) != 0) {
        std::printf("%s: prefill graphs: step %zu, logit %zu: %.9g kernel by kernel, %.9g from the graph  FAIL\n",
                    path.c_str(), k, v, off[k][v], on[k][v]);
        return false;
      }
    values += off[k].size();
  }
  std::printf("%s: prefill graphs: %zu steps, %zu logits the same bits with and without (%lld captured, %lld "
              "replayed)  ok\n",
              path.c_str(), off.size(), values, captured, replayed);
  return true;
}

} // namespace gpucheck

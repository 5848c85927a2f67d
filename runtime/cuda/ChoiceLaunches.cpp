// The token choices on the device (the Executor choice API of the CUDA
// executor, CudaExecutorImpl.h): greedy (genc_greedy), beam search's top-k
// candidates (genc_beam_norm, genc_beam_topk) and greedy with processors or
// sampling (the genc_token_pass passes, TokenChoice.h), each staged, run
// after the step's kernels (inside its graph) and read back; where a rule
// lists more ids than the staging buffers hold, the logits go to the host
// and the same rule chooses there.
#include "runtime/cuda/CudaExecutorImpl.h"

#include "runtime/BeamChoice.h"
#include "runtime/SampleChoice.h"
#include "runtime/cuda/TokenChoice.h"

#include <algorithm>
#include <cstring>

namespace genrt::cuda {

// A row's chosen token (i64) and its log-softmax (f32), as the greedy and
// token kernels leave them in the pinned buffer: R tokens, then R floats.
void CudaExecutor::takeChoices(int64_t R, int64_t *tokens, float *logprobs) const {
  std::memcpy(tokens, logitsHost_, static_cast<size_t>(R * 8));
  std::memcpy(logprobs, static_cast<const char *>(logitsHost_) + R * 8, static_cast<size_t>(R * 4));
}

Status CudaExecutor::runGreedy(const ProgramRun &run, int64_t *tokens, float *logprobs) {
  const int64_t R = rowsOf(run);
  if (Status s = execute(run, Choice::Greedy); !s)
    return s;
  if (!tokens)
    return Status::ok();
  takeChoices(R, tokens, logprobs);
  return Status::ok();
}

bool CudaExecutor::choosesBeams(int64_t k) const {
  const int64_t V = plan_->model.vocabSize;
  return beamFn_ && greedyFn_ && k >= 1 && k <= kBeamMaxK && k <= V &&
         (V + greedyParts_ - 1) / greedyParts_ <= kBeamPartElements;
}

Status CudaExecutor::runBeams(const ProgramRun &run, const std::vector<BeamRow> &rows, int64_t k, int32_t *tokens,
                              float *scores) {
  const int64_t R = rowsOf(run), V = plan_->model.vocabSize, rules = static_cast<int64_t>(rows.size());
  const int64_t share = R > 0 ? rules / R : 0;
  if (share < 1 || rules != R * share || rules > beamRules_ || !choosesBeams(k))
    return Status::error("runBeams: the same number of rules a row, at most the slots, and a k the kernel takes");
  int64_t ids = 0;
  for (const BeamRow &r : rows)
    ids += editWords(r);
  if (ids > beamIdsCap_) { // more listed ids than the buffer holds: the logits to the host
    if (Status s = execute(run, Choice::Logits); !s)
      return s;
    std::vector<float> row(static_cast<size_t>(V));
    for (int64_t r = 0; r < rules && tokens; ++r) {
      std::copy_n(static_cast<const float *>(logitsHost_) + (r / share) * V, V, row.data());
      beamCandidates(row.data(), V, rows[r], k, tokens + r * k, scores + r * k);
    }
    return Status::ok();
  }
  // The rules and their ids through the pinned staging buffer, ahead of
  // the step (the graph reads them from fixed device buffers).
  GencBeamRow *rule = static_cast<GencBeamRow *>(beamStaging_);
  int32_t *list = reinterpret_cast<int32_t *>(rule + rules);
  int32_t at = 0;
  bool renormalize = false;
  for (int64_t r = 0; r < rules; ++r) {
    rule[r] = GencBeamRow{};
    rule[r].score = rows[r].score;
    rule[r].renormalize = rows[r].renormalize;
    renormalize |= rows[r].renormalize;
    stageEdits(rows[r], rule[r].e, list, at);
  }
  const DriverApi &a = *dev_.api;
  if (Status s = dev_.check(a.cuMemcpyHtoDAsync(mem_.at("beam rules"), rule, rules * sizeof(GencBeamRow), stream_),
                            "copying the beam rules");
      !s)
    return s;
  if (at > 0)
    if (Status s = dev_.check(a.cuMemcpyHtoDAsync(mem_.at("beam ids"), list, at * 4, stream_), "copying the beam rules");
        !s)
      return s;
  beamK_ = k;
  beamShare_ = share;
  beamRenormalize_ = renormalize;
  if (Status s = execute(run, Choice::Beams); !s)
    return s;
  const GencBeamCand *c = static_cast<const GencBeamCand *>(logitsHost_);
  for (int64_t e = 0; e < rules * k && tokens; ++e) {
    if (c[e].token < 0 || c[e].token >= V)
      return Status::error("the beam kernel returned token " + std::to_string(c[e].token) + " outside the vocabulary");
    tokens[e] = c[e].token;
    scores[e] = c[e].score;
  }
  return Status::ok();
}

bool CudaExecutor::choosesTokens(const SampleRule &rule) const {
  const int64_t V = plan_->model.vocabSize;
  return tokenFn_ && V <= kTokenMaxVocab && (V + greedyParts_ - 1) / greedyParts_ <= kTokenPartElements &&
         (rule.topK >= 0);
}

Status CudaExecutor::runTokens(const ProgramRun &run, const std::vector<BeamRow> &rows,
                               const std::vector<double> &draws, const SampleRule &rule, int64_t *tokens,
                               float *logprobs) {
  const int64_t R = rowsOf(run), V = plan_->model.vocabSize;
  if (static_cast<int64_t>(rows.size()) != R || static_cast<int64_t>(draws.size()) != R || !choosesTokens(rule))
    return Status::error("runTokens: a rule and a draw per row, and a kernel that takes them");
  int64_t ids = 0;
  if (!stageTokenRows(rows, draws, rule, V, tokenIdsCap_, tokenStaging_, ids)) {
    // More listed ids than the buffer holds: the logits to the host, the
    // same rule there.
    if (Status s = execute(run, Choice::Logits); !s)
      return s;
    for (int64_t r = 0; r < R && tokens; ++r)
      chooseToken(static_cast<float *>(logitsHost_) + r * V, V, rows[r], rule, draws[r], tokens[r], logprobs[r]);
    return Status::ok();
  }
  const DriverApi &a = *dev_.api;
  if (Status s = dev_.check(a.cuMemcpyHtoDAsync(mem_.at("token rules"), tokenStaging_,
                                                R * sizeof(GencTokenRow) + ids * 4, stream_),
                            "copying the token rules");
      !s)
    return s;
  tokenPasses_ = tokenPasses(rule, V);
  if (Status s = execute(run, Choice::Tokens); !s)
    return s;
  if (!tokens)
    return Status::ok();
  takeChoices(R, tokens, logprobs);
  for (int64_t r = 0; r < R; ++r)
    if (tokens[r] < 0 || tokens[r] >= V)
      return Status::error("the token kernel returned token " + std::to_string(tokens[r]) +
                           " outside the vocabulary");
  if (report_.tokenCheck)
    report_.tokenCheck->check(static_cast<const float *>(checkLogits_), V, rows, draws, rule, tokens, logprobs);
  return Status::ok();
}

// GENC_CUDA_TOKENS=0: greedy with processors and sampling on the host from
// copied logits (A/B runs); plans from a genc without genc_token_pass too.
void CudaExecutor::initTokenChoice() {
  if (!options_.debug.tokensOnDevice || !mod_.function("genc_token_pass", tokenFn_))
    tokenFn_ = nullptr;
  if (tokenFn_ && options_.debug.tokensCheck)
    report_.tokenCheck = std::make_unique<TokenCheck>();
}

GencTokenParams CudaExecutor::tokenParams(CUdeviceptr logits, int64_t R) {
  GencTokenParams t{};
  t.logits = logits;
  t.work = mem_.at("token work");
  t.rowRules = mem_.at("token rules");
  t.list = t.rowRules + static_cast<CUdeviceptr>(R * sizeof(GencTokenRow));
  t.state = mem_.at("token state");
  t.parts = mem_.at("token parts");
  t.hist = mem_.at("token hist");
  t.tickets = mem_.at("token tickets");
  t.choice = choice_;
  t.rows = R;
  t.vocab = plan_->model.vocabSize;
  return t;
}

// After the steps: the logits back to the pinned buffer, or the choice
// kernels over them (greedy; beam top-k after it; or the token passes) and
// what they chose back.
Status CudaExecutor::enqueueChoice(const CompiledProgram &cp, int64_t R, Choice choice) {
  const DriverApi &a = *dev_.api;
  if (choice == Choice::Logits)
    return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, cp.outputs.at(0), R * plan_->model.vocabSize * 4, stream_),
                      "copying the logits back");
  if (cp.outputStored.at(0) != DType::F32)
    return Status::error("greedy on the device needs f32 logits");
  if (choice == Choice::Tokens) {
    if (report_.tokenCheck) // the raw logits too, for the host reference
      if (Status s = dev_.check(a.cuMemcpyDtoHAsync(checkLogits_, cp.outputs.at(0), R * plan_->model.vocabSize * 4,
                                                    stream_),
                                "copying the logits back (GENC_CUDA_TOKENS_CHECK)");
          !s)
        return s;
    if (Status s = launchTokenPasses(dev_, tokenFn_, stream_, tokenParams(cp.outputs[0], R), tokenPasses_,
                                     greedyParts_);
        !s)
      return s;
    return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, choice_, R * 12, stream_), "copying the chosen tokens back");
  }
  GencGreedyParams p{cp.outputs[0],         choice_, choice_ + static_cast<CUdeviceptr>(R) * 8,
                     mem_.at("greedy parts"), mem_.at("greedy tickets"), R,
                     plan_->model.vocabSize};
  void *args[] = {&p};
  if (Status s = dev_.launch(greedyFn_, static_cast<unsigned>(R), static_cast<unsigned>(greedyParts_), 1,
                             kGreedyThreads, 1, 0, stream_, args, "genc_greedy");
      !s)
    return s;
  if (choice == Choice::Beams) {
    GencBeamParams b{cp.outputs[0],
                     choice_,
                     mem_.at("beam rules"),
                     mem_.at("beam ids"),
                     mem_.at("beam parts"),
                     mem_.at("beam tickets"),
                     mem_.at("beam choices"),
                     mem_.at("beam norm parts"),
                     mem_.at("beam norms"),
                     R,
                     plan_->model.vocabSize,
                     beamK_,
                     beamShare_};
    void *bargs[] = {&b};
    const unsigned rules = static_cast<unsigned>(R * beamShare_), parts = static_cast<unsigned>(greedyParts_);
    if (beamRenormalize_)
      if (Status s = dev_.launch(beamNormFn_, rules, parts, 1, kGreedyThreads, 1, 0, stream_, bargs, "genc_beam_norm");
          !s)
        return s;
    if (Status s = dev_.launch(beamFn_, rules, parts, 1, kGreedyThreads, 1, 0, stream_, bargs, "genc_beam_topk");
        !s)
      return s;
    return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, mem_.at("beam choices"),
                                          rules * beamK_ * static_cast<int64_t>(sizeof(GencBeamCand)), stream_),
                      "copying the beam candidates back");
  }
  return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, choice_, R * 12, stream_), "copying the chosen tokens back");
}

// A decode step's graph key (CudaGraphs.h): (T, choice, beams' k, rules a
// row and renormalization, or the token passes' set): kBeamMaxK < 64, a
// row's rules (its beams) < 32, the passes 12 bits.
int64_t CudaExecutor::graphKey(Choice choice) const {
  const int64_t beams = beamK_ | (beamRenormalize_ ? 64 : 0) | beamShare_ << 7;
  return (staged_.tokens * 4 + static_cast<int64_t>(choice)) * 4096 +
         (choice == Choice::Beams ? beams : choice == Choice::Tokens ? tokenPasses_ : 0);
}

} // namespace genrt::cuda

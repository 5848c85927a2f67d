// The token choices on the device (the CUDA executor's answers to choice
// requests, runtime/Choice.h): greedy (genc_greedy), beam search's top-k
// candidates (genc_beam_norm, genc_beam_topk) and greedy with processors or
// sampling (the genc_token_pass passes, TokenChoice.h), each staged, run
// after the step's kernels (inside its graph) and read back. A request
// whose rules list more ids than the staging buffers hold is not chosen
// here (chooses() says no): the Session answers it from the logits.
#include "runtime/cuda/CudaExecutorImpl.h"

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

bool CudaExecutor::chooses(const ChoiceRequest &req, ProgramKind kind) const {
  const int64_t V = plan_->model.vocabSize;
  int64_t ids = 0;
  switch (req.kind) {
  case ChoiceKind::Logits:
    return true;
  case ChoiceKind::Greedy:
    return greedyFn_ != nullptr;
  case ChoiceKind::Beams:
    if (!beamFn_ || !greedyFn_ || req.k < 1 || req.k > kBeamMaxK || req.k > V ||
        (V + greedyParts_ - 1) / greedyParts_ > kBeamPartElements ||
        static_cast<int64_t>(req.rules.size()) > beamRules_)
      return false;
    for (const BeamRow &r : req.rules)
      ids += editWords(r);
    return ids <= beamIdsCap_;
  case ChoiceKind::Tokens:
    // Tokens by the sampling rule in decode steps (a prompt's first token
    // comes from its logits on the host).
    if (kind != ProgramKind::Decode || !tokenFn_ || V > kTokenMaxVocab ||
        (V + greedyParts_ - 1) / greedyParts_ > kTokenPartElements || req.rule.topK < 0)
      return false;
    for (const BeamRow &r : req.rules)
      ids += editWords(r);
    return ids <= tokenIdsCap_;
  }
  return false;
}

// Where a tree-attention group runs the same step on every GPU, only one
// returns results: the others are given no answer (nullptr).
Status CudaExecutor::run(const ProgramRun &run, const ChoiceRequest &req, ChoiceAnswer *answer) {
  const int64_t R = rowsOf(run), V = plan_->model.vocabSize;
  if (std::string why = req.check(R, V); !why.empty())
    return Status::error(why);
  if (req.kind != ChoiceKind::Logits && !chooses(req, run.kind))
    return Status::error("the CUDA executor cannot answer this choice request where the logits are");
  if (answer)
    answer->reset(req, R, V);
  switch (req.kind) {
  case ChoiceKind::Logits:
    if (Status s = execute(run, ChoiceKind::Logits); !s)
      return s;
    if (answer)
      std::memcpy(answer->logits.data(), logitsHost_, static_cast<size_t>(R * V * 4));
    return Status::ok();
  case ChoiceKind::Greedy:
    return runGreedy(run, answer);
  case ChoiceKind::Beams:
    return runBeams(run, req.rules, req.k, answer);
  case ChoiceKind::Tokens:
    return runTokens(run, req.rules, req.draws, req.rule, answer);
  }
  return Status::error("an unknown choice kind");
}

Status CudaExecutor::runGreedy(const ProgramRun &run, ChoiceAnswer *answer) {
  const int64_t R = rowsOf(run);
  if (Status s = execute(run, ChoiceKind::Greedy); !s)
    return s;
  if (answer)
    takeChoices(R, answer->tokens.data(), answer->logprobs.data());
  return Status::ok();
}

// chooses() said yes: the rules and their ids fit the staging buffers.
Status CudaExecutor::runBeams(const ProgramRun &run, const std::vector<BeamRow> &rows, int64_t k,
                              ChoiceAnswer *answer) {
  const int64_t R = rowsOf(run), V = plan_->model.vocabSize, rules = static_cast<int64_t>(rows.size());
  const int64_t share = R > 0 ? rules / R : 0;
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
  if (Status s = execute(run, ChoiceKind::Beams); !s)
    return s;
  const GencBeamCand *c = static_cast<const GencBeamCand *>(logitsHost_);
  for (int64_t e = 0; e < rules * k && answer; ++e) {
    if (c[e].token < 0 || c[e].token >= V)
      return Status::error("the beam kernel returned token " + std::to_string(c[e].token) + " outside the vocabulary");
    answer->candidates[e] = c[e].token;
    answer->scores[e] = c[e].score;
  }
  return Status::ok();
}

// chooses() said yes: a decode step whose ids fit the staging buffer.
Status CudaExecutor::runTokens(const ProgramRun &run, const std::vector<BeamRow> &rows,
                               const std::vector<double> &draws, const SampleRule &rule, ChoiceAnswer *answer) {
  const int64_t R = rowsOf(run), V = plan_->model.vocabSize;
  int64_t ids = 0;
  if (!stageTokenRows(rows, draws, rule, V, tokenIdsCap_, tokenStaging_, ids))
    return Status::error("the token rules' ids exceed the staging buffer");
  const DriverApi &a = *dev_.api;
  if (Status s = dev_.check(a.cuMemcpyHtoDAsync(mem_.at("token rules"), tokenStaging_,
                                                R * sizeof(GencTokenRow) + ids * 4, stream_),
                            "copying the token rules");
      !s)
    return s;
  tokenPasses_ = tokenPasses(rule, V);
  if (Status s = execute(run, ChoiceKind::Tokens); !s)
    return s;
  if (!answer)
    return Status::ok();
  int64_t *tokens = answer->tokens.data();
  float *logprobs = answer->logprobs.data();
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
Status CudaExecutor::enqueueChoice(const CompiledProgram &cp, int64_t R, ChoiceKind choice) {
  const DriverApi &a = *dev_.api;
  if (choice == ChoiceKind::Logits)
    return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, cp.outputs.at(0), R * plan_->model.vocabSize * 4, stream_),
                      "copying the logits back");
  if (cp.outputStored.at(0) != DType::F32)
    return Status::error("greedy on the device needs f32 logits");
  if (choice == ChoiceKind::Tokens) {
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
  if (choice == ChoiceKind::Beams) {
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
int64_t CudaExecutor::graphKey(ChoiceKind choice) const {
  const int64_t beams = beamK_ | (beamRenormalize_ ? 64 : 0) | beamShare_ << 7;
  return (staged_.tokens * 4 + static_cast<int64_t>(choice)) * 4096 +
         (choice == ChoiceKind::Beams ? beams : choice == ChoiceKind::Tokens ? tokenPasses_ : 0);
}

// A @prefill run's graph key (CudaGraphs.h's PrefillGraphs): what its
// launches and copies take from the host beside the fixed buffers' contents
// — the program, the decode key's token count and choice, the logit rows,
// the attention tiles, the cross lengths and every symbol (in name order).
std::vector<int64_t> CudaExecutor::prefillKey(const CompiledProgram &cp, const ProgramRun &run,
                                              ChoiceKind choice) const {
  std::vector<int64_t> key = {static_cast<int64_t>(reinterpret_cast<uintptr_t>(&cp)), graphKey(choice),
                              staged_.rowCount, ctx_.tileCount, ctx_.loneTokens, staged_.crossCount};
  for (const auto &[name, value] : run.symbols)
    key.push_back(value);
  return key;
}

} // namespace genrt::cuda

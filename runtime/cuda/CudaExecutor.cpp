// The CUDA executor. At load: open the GPU, check that everything fits,
// upload the weights, lay out one arena (the plan's offsets), the KV caches
// (runtime/KvLayout.h) and the attention workspaces, and resolve every op of
// every program to a step: a cuBLASLt GEMM, a generated fused kernel, an
// attention kernel family, a device copy (views), or host-computed dims.
// A run stages its token ids, positions and token places in pinned memory,
// copies them over, runs the steps on one stream and copies the logits back;
// a decode step of a given batch size is captured once as a CUDA graph and
// replayed after that.
#include "runtime/cuda/CudaExecutor.h"

#include "runtime/Env.h"
#include "runtime/WeightUses.h"

#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/CudaSteps.h"
#include "runtime/cuda/DeviceMemory.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/KernelAbi.h"
#include "runtime/cuda/TokenAbi.h"
#include "runtime/cuda/TokenChoice.h"
#include "runtime/cuda/TreeExecutor.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace genrt {

Status probeCuda() {
  Status err = Status::ok();
  cuda::driver(err);
  return err;
}

namespace cuda {
namespace {

constexpr int64_t kGemmWorkspace = 32 << 20;

class CudaExecutor final : public TreeReplica {
public:
  explicit CudaExecutor(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)), mem_(dev_) {}
  ~CudaExecutor() override {
    for (const auto &[kind, v] : ctx_.profileMs)
      std::fprintf(stderr, "genrun: profile: %-20s %10.3f ms over %6lld steps (%.4f ms each)\n", kind.c_str(),
                   v.first, static_cast<long long>(v.second), v.first / std::max<int64_t>(1, v.second));
    if (tokenCheck_)
      tokenCheck_->report();
    for (auto &[t, g] : graphs_)
      if (g)
        dev_.api->cuGraphExecDestroy(g);
    if (ctx_.tree.comm)
      ctx_.tree.nccl->commDestroy(ctx_.tree.comm);
    if (stream_)
      dev_.api->cuStreamDestroy(stream_);
    gemm_.reset();
    mod_.unload();
    dev_.close();
  }

  /// `tree`: this executor is one GPU of a tree-attention group.
  Status init(const TreeRank *tree) {
    if (Status s = Device::open(tree ? tree->ordinal : 0, dev_); !s)
      return s;
    // Shared prompts (the beams read their prompt by (region, index) pairs)
    // on one GPU, unless GENC_CUDA_SHARED_PROMPTS=0 (A/B runs): else each
    // slot keeps its whole sequence and a reorder copies rows (the plan's
    // kernels take either: `pairs` 0). Tree attention shards whole sequences.
    const char *sp = genrt::env::get("GENC_CUDA_SHARED_PROMPTS");
    shared_ = !tree && plan_->kv.sharesPrompts() && !(sp && std::string(sp) == "0") && kernelsSharePrompts();
    kv_ = shared_ ? plan_->kv : plan_->kv.unshared();
    if (tree)
      if (Status s = plan_->kv.unshared().sharded(tree->ranks, kv_); !s)
        return Status::error("tree attention over " + std::to_string(tree->ranks) + " GPUs: " + s.message());
    if ((!plan_->cubins.empty() || !plan_->ptx.empty()) && plan_->kernelAbi != kGencKernelAbi)
      return Status::error("the plan's GPU kernels follow kernel contract " + std::to_string(plan_->kernelAbi) +
                           ", this genrun launches contract " + std::to_string(kGencKernelAbi) +
                           "; recompile the model with a matching genc");
    if (Status s = mod_.load(dev_, *plan_); !s)
      return s;
    if (Status s = Gemm::open(dev_, kGemmWorkspace, gemm_); !s)
      return s;
    if (Status s = dev_.check(dev_.api->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s)
      return s;
    if (Status s = planMemory(tree != nullptr); !s)
      return s;
    if (Status s = mem_.allocate(); !s)
      return s;
    if (tree) {
      StepContext::Tree &tr = ctx_.tree;
      tr.nccl = tree->nccl;
      tr.shards = tree->ranks;
      tr.shard = tree->rank;
      tr.lse = mem_.at("tree lse");
      tr.lseMax = mem_.at("tree lse max");
      tr.packed = mem_.at("tree packed");
      const char *how = genrt::env::get("GENC_TREE_COMBINE");
      tr.combine = how && std::string(how) == "gather" ? 1 : 0;
      rank_ = *tree; // the group is joined later (joinGroup), once every GPU has
                     // loaded: a GPU that fails here must leave none waiting in NCCL
    }
    // The tickets start at zero; each launch leaves them so. The caches too:
    // rows a run never wrote hold zeros, not whatever the memory held
    // (a benchmark that skips the prefill reads them).
    for (const char *t : {"attention tickets", "greedy tickets", "beam tickets", "token tickets", "token hist", "kv cache"})
      if (mem_.bytes(t) > 0)
      if (Status s = dev_.check(dev_.api->cuMemsetD8(mem_.at(t), 0, static_cast<size_t>(mem_.bytes(t))), "zeroing tickets");
          !s)
        return s;
    // The GEMV kernels for products of <= 8 rows on sm_90 and newer, where
    // they start before the kernel ahead of them ends (dependent launch):
    // the 1.1B Llama's batch-1 step 1.377 -> 1.313 ms on an H100 (session
    // 10, docs/performance.md); before dependent launch they lost 4.7%.
    // GENC_CUDA_GEMV=0 / =1 forces cuBLASLt / the GEMVs.
    const char *gv = genrt::env::get("GENC_CUDA_GEMV");
    ctx_.gemv = gv && *gv ? std::string(gv) == "1" : dev_.major >= 9;
    // Of one row only: its loop re-reads the activations for every row
    // from L1, and on the 1.1B decode step (H100, session 11) cuBLASLt won
    // from 2 rows on: 1.390 vs 1.548 ms at 2, 1.416 vs 3.429 at 8.
    // GENC_CUDA_GEMV_ROWS=N (1..8) sets the limit.
    const char *gr = genrt::env::get("GENC_CUDA_GEMV_ROWS");
    ctx_.gemvRows = gr && *gr ? std::clamp<int64_t>(std::atoll(gr), 1, kGemvMaxRows) : 1;
    // A one-row GEMV runs the add + norm kernel before it and the SwiGLU
    // after it itself (three kernel boundaries fewer a Llama layer);
    // GENC_CUDA_GEMV_FUSION=0 / norm / glu for A/B runs.
    const char *fu = genrt::env::get("GENC_CUDA_GEMV_FUSION");
    const std::string fs = fu ? fu : "";
    if (fs != "" && fs != "0" && fs != "1" && fs != "norm" && fs != "glu")
      return Status::error("GENC_CUDA_GEMV_FUSION=" + fs + ": expected 0, 1, norm or glu");
    ctx_.gemvFusion = fs == "0" ? 0 : fs == "norm" ? 1 : fs == "glu" ? 2 : 3;
    // The merge after a one-token decode kernel can prefetch the next GEMVs'
    // weights into L2 while that kernel's latency chain leaves HBM idle
    // (cp.async.bulk, sm_90 and newer): the 1.1B's batch-1 step 1.218 ->
    // 1.196 ms on an H100 with session 13's merge. Since the merge runs in
    // 512 threads (session 27) it costs the step instead: on the H200
    // 1.014-1.026 ms with 32 MiB, 0.992-0.995 without (session 28), so it is
    // off unless asked for. GENC_CUDA_L2_PREFETCH_MB=N (at most 64, and 64% of
    // the L2) turns it on.
    const char *pf = genrt::env::get("GENC_CUDA_L2_PREFETCH_MB");
    ctx_.l2PrefetchBytes = pf && *pf && dev_.major >= 9
                               ? std::min<int64_t>(std::clamp<int64_t>(std::atoll(pf), 0, 64) << 20,
                                                   int64_t(dev_.l2Bytes) * 64 / 100)
                               : 0;
    ctx_.weightTransposed.assign(plan_->weights.size(), 0);
    if (ctx_.gemv)
      chooseTransposedWeights();
    if (Status s = uploadWeights(); !s)
      return s;
    ctx_.dev = &dev_;
    ctx_.gemm = gemm_.get();
    ctx_.stream = stream_;
    ctx_.plan = plan_.get();
    ctx_.layout = &kv_;
    ctx_.arena = mem_.at("arena");
    ctx_.kv = mem_.at("kv cache");
    ctx_.cross = mem_.at("cross kv cache");
    ctx_.scratch = mem_.at("attention scratch");
    ctx_.partial = mem_.at("attention partials");
    ctx_.partialRows = partialRows_;
    ctx_.tickets = mem_.at("attention tickets");
    ctx_.places = mem_.at("token places");
    ctx_.tiles = mem_.at("prefill tiles");
    ctx_.crossLengths = mem_.at("cross lengths");
    ctx_.pairs = shared_ ? mem_.at("kv pairs") : 0;
    choice_ = mem_.at("greedy choices");
    if (!mod_.function("genc_greedy", greedyFn_))
      greedyFn_ = nullptr; // a plan from a genc without it: choices on the host
    // GENC_CUDA_BEAMS=0: beam candidates ranked on the host from copied
    // logits (A/B runs).
    const char *bk = genrt::env::get("GENC_CUDA_BEAMS");
    if (beamIdsCap_ == 0 || (bk && std::string(bk) == "0") || !mod_.function("genc_beam_topk", beamFn_) ||
        !mod_.function("genc_beam_norm", beamNormFn_))
      beamFn_ = nullptr; // no beams, or a plan from a genc without them: candidates on the host
    initTokenChoice();
    for (const char *a : {"input_ids", "positions", "logit_rows"})
      ctx_.arguments[a] = mem_.at(std::string("argument ") + a);
    for (const auto &[name, prog] : plan_->programs)
      if (Status s = compileProgram(prog, ctx_, mod_, weightPtr_, programs_[name]); !s)
        return s;
    if (Status s = gemm_->warm(stream_); !s)
      return s;
    if (Status s = waitStream("loading cuBLASLt's kernels"); !s)
      return s;
    if (Status s = mem_.pinned(stagingBytes_, staging_); !s)
      return s;
    if (Status s = mem_.pinned(logitsBytes_, logitsHost_); !s)
      return s;
    if (shared_) { // (region 0, index 0) where nothing is staged yet: a row of the cache
      if (Status s = mem_.pinned(pairsBytes_, pairsHost_); !s)
        return s;
      std::memset(pairsHost_, 0, static_cast<size_t>(pairsBytes_));
      mirrorStamp_.assign(size_t(kv_.slots), 0); // no KvRows stamp is 0
      mirrorLen_.assign(size_t(kv_.slots), 0);
      if (Status s = dev_.check(dev_.api->cuMemsetD8(ctx_.pairs, 0, static_cast<size_t>(pairsBytes_)), "cuMemsetD8"); !s)
        return s;
    }
    if (beamFn_)
      if (Status s = mem_.pinned(beamStagingBytes_, beamStaging_); !s)
        return s;
    if (tokenFn_)
      if (Status s = mem_.pinned(tokenStagingBytes_, tokenStaging_); !s)
        return s;
    if (tokenCheck_)
      if (Status s = mem_.pinned(logitsBytes_, checkLogits_); !s)
        return s;
    if (copier_.maxRecords > 0) {
      copier_.scratch = mem_.at("reorder scratch");
      copier_.records = mem_.at("reorder records");
      if (Status s = mem_.pinned(copier_.maxRecords * static_cast<int64_t>(sizeof(GencKvCopy)), copier_.staging); !s)
        return s;
      if (!mod_.function("genc_kv_copy", copier_.fn))
        copier_.fn = nullptr; // a plan from a genc without it: 2D memcpys
    }
    if (plan_->kv.crossI8 && !mod_.function("genc_cross_store_i8", crossStoreFn_))
      return Status::error("the plan holds its cross-attention cache as i8 but has no genc_cross_store_i8 kernel; "
                           "recompile it with this genc");
    const char *g = genrt::env::get("GENC_CUDA_GRAPHS");
    useGraphs_ = !(g && std::string(g) == "0");
    const char *sync = genrt::env::get("GENC_CUDA_SYNC");
    ctx_.syncEachStep = sync && std::string(sync) == "1";
    if (const char *skip = genrt::env::get("GENC_CUDA_SKIP")) {
      std::string list = skip;
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        if (comma > at)
          ctx_.skipKinds.insert(list.substr(at, comma - at));
        at = comma + 1;
      }
    }
    const char *prof = genrt::env::get("GENC_CUDA_PROFILE");
    ctx_.profile = prof && std::string(prof) == "1";
    if (ctx_.profile)
      useGraphs_ = false;
    return Status::ok();
  }

  /// A GPU of a tree-attention group joins it (after init, every GPU at
  /// once: NCCL waits for all of them).
  Status joinGroup() override {
    StepContext::Tree &tr = ctx_.tree;
    if (!tr.nccl)
      return Status::error("joinGroup: this executor is not one GPU of a group");
    ncclComm_t comm = nullptr;
    if (Status s = tr.nccl->check(tr.nccl->commInitRank(&comm, rank_.ranks, rank_.id, rank_.rank), "ncclCommInitRank");
        !s)
      return s;
    tr.comm = comm;
    // NCCL connects its peers at a communicator's first collective, which
    // cannot happen inside a stream capture (the first decode step's graph
    // would fail with "internal error" where no prefill ran a collective
    // before it): one small all-reduce now, outside any capture.
    if (Status s = tr.nccl->check(tr.nccl->allReduce(reinterpret_cast<void *>(tr.lse),
                                                     reinterpret_cast<void *>(tr.lseMax), 1, kNcclFloat32, kNcclMax,
                                                     tr.comm, stream_),
                                  "ncclAllReduce (connecting the GPUs)");
        !s)
      return s;
    return waitStream("connecting the GPUs");
  }

  std::string deviceName() const override {
    return "cuda: " + dev_.name + " (sm_" + std::to_string(dev_.arch()) + ", " + mod_.source() + ")";
  }
  int64_t memoryBytes() const override { return mem_.totalBytes(); }
  int64_t deviceBytes() const override { return dev_.freeBytes; } // free at open, before any allocation
  std::string memoryReport() const override { return mem_.report() + " (" + gemm_->version() + ")"; }
  std::string choiceReport() const override {
    return std::to_string(choiceRuns_) + " runs chose their tokens on the device, " + std::to_string(logitRuns_) +
           " copied their logits to the host";
  }

  // Greedy in any run; beam candidates in any run whose rules and listed
  // ids fit the staging buffers; tokens by the sampling rule in decode
  // steps whose ids fit. The rest the Session answers from the logits.
  bool chooses(const ChoiceRequest &req, ProgramKind kind) const override {
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
  Status run(const ProgramRun &run, const ChoiceRequest &req, ChoiceAnswer *answer) override {
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

  bool sharesPrompts() const override { return shared_; }
  // Whether every self-attention op's kernels read rows through the pairs
  // (genc set gpu_shared_prompts where it compiled them so): else the
  // executor keeps a copy a beam, which any of them indexes.
  bool kernelsSharePrompts() const {
    bool any = false;
    for (const auto &[name, prog] : plan_->programs)
      for (const OpInfo &op : prog.ops)
        if (op.kind == "kv_attention") {
          if (attrInt(op.attrs, "gpu_shared_prompts", 0) != 1)
            return false;
          any = true;
        }
    return any;
  }

  // A row's chosen token (i64) and its log-softmax (f32), as the greedy and
  // token kernels leave them in the pinned buffer: R tokens, then R floats.
  void takeChoices(int64_t R, int64_t *tokens, float *logprobs) const {
    std::memcpy(tokens, logitsHost_, static_cast<size_t>(R * 8));
    std::memcpy(logprobs, static_cast<const char *>(logitsHost_) + R * 8, static_cast<size_t>(R * 4));
  }

  Status runGreedy(const ProgramRun &run, ChoiceAnswer *answer) {
    const int64_t R = rowsOf(run);
    if (Status s = execute(run, ChoiceKind::Greedy); !s)
      return s;
    if (answer)
      takeChoices(R, answer->tokens.data(), answer->logprobs.data());
    return Status::ok();
  }

  // chooses() said yes: the rules and their ids fit the staging buffers.
  Status runBeams(const ProgramRun &run, const std::vector<BeamRow> &rows, int64_t k, ChoiceAnswer *answer) {
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
  Status runTokens(const ProgramRun &run, const std::vector<BeamRow> &rows, const std::vector<double> &draws,
                   const SampleRule &rule, ChoiceAnswer *answer) {
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
    if (tokenCheck_)
      tokenCheck_->check(static_cast<const float *>(checkLogits_), V, rows, draws, rule, tokens, logprobs);
    return Status::ok();
  }

  Status encode(const ProgramRun &run) override {
    if (Status s = groupIntact(); !s)
      return s;
    const CompiledProgram &cp = programs_.at(run.program->name);
    stage(run);
    if (Status s = enqueueInputs(run); !s)
      return s;
    if (Status s = runSteps(cp, ctx_, run); !s)
      return s;
    if (Status s = storeCross(cp, run); !s)
      return s;
    return waitStream("running encode (GENC_CUDA_SYNC=1 names the kernel)");
  }

  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                   const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) override {
    if (shared_)
      return Status::error("copySlots: this executor's beams share their prompt and are reordered by index");
    if (!copier_.scratch)
      return Status::error("this plan has one beam a sequence: no slot reordering");
    if (kv_.shards == 1)
      return copyCacheSlots(ctx_, copier_, dst, src, lengths, from);
    // A shard moves its own rows of those positions.
    std::vector<int64_t> rows(lengths.size()), fromRows(from.size());
    for (size_t i = 0; i < lengths.size(); ++i)
      rows[i] = KvLayout::shardRows(lengths[i], ctx_.tree.shard, kv_.shards);
    for (size_t i = 0; i < from.size(); ++i)
      fromRows[i] = KvLayout::shardRows(from[i], ctx_.tree.shard, kv_.shards);
    return copyCacheSlots(ctx_, copier_, dst, src, rows, fromRows);
  }

private:
  // Sizes every device buffer before allocating any.
  Status planMemory(bool tree) {
    const Plan &p = *plan_;
    const KvLayout &kv = kv_;
    int64_t weightBytes = 0;
    for (const Tensor &w : p.weights)
      weightBytes += (static_cast<int64_t>(w.numBytes()) + 255) / 256 * 256;
    mem_.plan("weights", weightBytes);
    mem_.plan("kv cache", kv.selfBytes());
    if (!kv.crossLayers.empty())
      mem_.plan("cross kv cache", kv.crossBytes());
    mem_.plan("arena", p.arenaBytes());
    // The attention workspace: the widest run (prefill chunk, decode slots,
    // a packed @encode) and the widest layer.
    int64_t maxT = 0, maxRows = 0, maxH = 0, maxD = 0, maxStride = 0;
    for (const auto &[name, prog] : p.programs) {
      for (const char *sym : {"tokens", "src_tokens"})
        if (auto it = prog.maxSymbols.find(sym); it != prog.maxSymbols.end())
          maxT = std::max(maxT, it->second);
      if (auto it = prog.maxSymbols.find("rows"); it != prog.maxSymbols.end())
        maxRows = std::max(maxRows, it->second);
      for (const OpInfo &op : prog.ops)
        if (op.kind.find("attention") != std::string::npos) {
          int64_t H = attrInt(op.attrs, "num_heads", 0), KVH = attrInt(op.attrs, "num_kv_heads", H),
                  D = attrInt(op.attrs, "head_dim", 0);
          maxH = std::max(maxH, H);
          maxD = std::max(maxD, D);
          maxStride = std::max(maxStride, (H + 2 * KVH) * D);
        }
    }
    maxRows = std::max<int64_t>({maxRows, kv.slots, int64_t(1)});
    maxT = std::max(maxT, kv.slots);
    partialRows_ = 4 * maxT * std::max<int64_t>(maxH, 1);
    mem_.plan("attention scratch", maxT * maxStride * 4);
    mem_.plan("attention partials", partialRows_ * (maxD + 1) * 4);
    mem_.plan("attention tickets", maxT * std::max<int64_t>(maxH, 1) * 4);
    if (tree) { // tree attention: lse [T, H], its max, [T, H, D + 1] (f32)
      mem_.plan("tree lse", maxT * std::max<int64_t>(maxH, 1) * 4);
      mem_.plan("tree lse max", maxT * std::max<int64_t>(maxH, 1) * 4);
      mem_.plan("tree packed", maxT * std::max<int64_t>(maxH, 1) * (maxD + 1) * 4 * kv.shards);
    }
    mem_.plan("token places", maxT * static_cast<int64_t>(sizeof(GencTokenPlace)));
    mem_.plan("prefill tiles", maxT * 8);
    mem_.plan("cross lengths", std::max<int64_t>(kv.crossEntries, 1) * 8);
    for (const char *a : {"input_ids", "positions", "logit_rows"})
      mem_.plan(std::string("argument ") + a, maxT * 8);
    int64_t layerMax = 0;
    for (size_t l = 0; l < kv.layers.size(); ++l)
      layerMax = std::max(layerMax, kv.layerElements(l) * static_cast<int64_t>(dtypeSize(kv.dtype)));
    if (shared_) { // every slot's (region, index) pairs, and their pinned mirror
      pairsBytes_ = kv.slots * kv.maxLength * 8;
      mem_.plan("kv pairs", pairsBytes_);
    }
    if (p.model.maxBeams > 1 && !shared_) { // K and V of one layer, every slot; the copy records of every layer
      mem_.plan("reorder scratch", 2 * layerMax);
      copier_.maxRecords = 2 * static_cast<int64_t>(kv.layers.size()) * std::max<int64_t>(kv.slots, 1);
      mem_.plan("reorder records", copier_.maxRecords * static_cast<int64_t>(sizeof(GencKvCopy)));
    }
    mem_.plan("greedy choices", maxRows * 12);
    greedyParts_ = std::clamp<int64_t>((p.model.vocabSize + kGreedyPartElements - 1) / kGreedyPartElements, 1,
                                       kGreedyMaxParts);
    mem_.plan("greedy parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
    mem_.plan("greedy tickets", maxRows * 4);
    planTokenChoice(maxRows);
    if (p.model.maxBeams > 1) { // beam candidates on the device (genc_beam_topk)
      beamIdsCap_ = maxRows * 4 * std::max<int64_t>(p.model.maxLength, 1) + 4096;
      beamRules_ = maxRows;
      mem_.plan("beam rules", maxRows * static_cast<int64_t>(sizeof(GencBeamRow)));
      mem_.plan("beam ids", beamIdsCap_ * 4);
      mem_.plan("beam parts", maxRows * greedyParts_ * kBeamMaxK * static_cast<int64_t>(sizeof(GencBeamCand)));
      mem_.plan("beam tickets", maxRows * 4);
      mem_.plan("beam choices", maxRows * kBeamMaxK * static_cast<int64_t>(sizeof(GencBeamCand)));
      mem_.plan("beam norm parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
      mem_.plan("beam norms", maxRows * 8);
      beamStagingBytes_ = maxRows * static_cast<int64_t>(sizeof(GencBeamRow)) + beamIdsCap_ * 4;
    }
    stagingBytes_ = maxT * (4 * 8 + static_cast<int64_t>(sizeof(GencTokenPlace))) + kv.crossEntries * 8 + 64;
    // The logits come back here, or a row's greedy choice, or its beam
    // candidates (k of 8 bytes: more than a small vocabulary's logits).
    logitsBytes_ = maxRows * std::max<int64_t>(p.model.vocabSize * 4, kBeamMaxK * 8);
    return Status::ok();
  }

  // genc_token_pass's buffers: a row's rule and the ids it names (staged
  // together: one copy), its state, parts, histograms, ticket and its
  // processed logits.
  void planTokenChoice(int64_t maxRows) {
    const Plan &p = *plan_;
    const int64_t V = p.model.vocabSize;
    tokenIdsCap_ = maxRows * 4 * std::max<int64_t>(p.model.maxLength, 1) + 4096;
    tokenStagingBytes_ = maxRows * static_cast<int64_t>(sizeof(GencTokenRow)) + tokenIdsCap_ * 4;
    mem_.plan("token rules", tokenStagingBytes_);
    mem_.plan("token state", maxRows * static_cast<int64_t>(sizeof(GencTokenState)));
    mem_.plan("token parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
    mem_.plan("token hist", maxRows * kTokenBins * 12);
    mem_.plan("token tickets", maxRows * 4);
    mem_.plan("token work", maxRows * V * 4);
  }

  // GENC_CUDA_TOKENS=0: greedy with processors and sampling on the host from
  // copied logits (A/B runs); plans from a genc without genc_token_pass too.
  void initTokenChoice() {
    const char *tk = genrt::env::get("GENC_CUDA_TOKENS");
    if ((tk && std::string(tk) == "0") || !mod_.function("genc_token_pass", tokenFn_))
      tokenFn_ = nullptr;
    const char *check = genrt::env::get("GENC_CUDA_TOKENS_CHECK");
    if (tokenFn_ && check && std::string(check) == "1")
      tokenCheck_ = std::make_unique<TokenCheck>();
  }

  GencTokenParams tokenParams(CUdeviceptr logits, int64_t R) {
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

  // Weights that only matmuls read, as b of [K, N]: laid out [N, K] for the
  // GEMV kernels (plans from a genc that emits them: `gpu_gemv`).
  void chooseTransposedWeights() {
    const Plan &p = *plan_;
    const std::vector<char> ok = weightsReadOnlyBy(p, [](const OpInfo &op, size_t i) {
      return op.kind == "matmul" && i == 1 && attrInt(op.attrs, "transpose_b", 0) == 0 &&
             !attrStr(op.attrs, "gpu_gemv", "").empty();
    });
    for (size_t w = 0; w < p.weights.size(); ++w) {
      const Tensor &t = p.weights[w];
      size_t es = dtypeSize(t.dtype());
      ctx_.weightTransposed[w] = ok[w] && t.rank() == 2 && (es == 2 || es == 4) && t.numBytes() > 0;
    }
  }

  // Uploads each weight; a transposed one goes through a staging buffer and
  // the plan's transpose kernel. Without room for the staging buffer the
  // weights stay as the plan lays them out (cuBLASLt reads them either way).
  Status uploadWeights() {
    const DriverApi &a = *dev_.api;
    size_t stageBytes = 0;
    for (size_t w = 0; w < plan_->weights.size(); ++w)
      if (ctx_.weightTransposed[w])
        stageBytes = std::max(stageBytes, plan_->weights[w].numBytes());
    CUdeviceptr stage = 0;
    CUfunction transpose[2] = {};
    const bool canTranspose = stageBytes && mod_.function("genc_transpose_2", transpose[0]) &&
                              mod_.function("genc_transpose_4", transpose[1]) &&
                              a.cuMemAlloc(&stage, stageBytes) == CUDA_SUCCESS;
    if (!canTranspose) {
      std::fill(ctx_.weightTransposed.begin(), ctx_.weightTransposed.end(), 0);
      stage = 0;
    }
    CUdeviceptr at = mem_.at("weights");
    Status s = Status::ok();
    for (size_t i = 0; i < plan_->weights.size() && s; ++i) {
      const Tensor &w = plan_->weights[i];
      weightPtr_.push_back(at);
      if (!w.numBytes()) {
      } else if (!ctx_.weightTransposed[i]) {
        s = dev_.check(a.cuMemcpyHtoD(at, w.rawData(), w.numBytes()), "uploading the weights");
      } else if ((s = dev_.check(a.cuMemcpyHtoD(stage, w.rawData(), w.numBytes()), "uploading the weights"))) {
        GencTransposeParams tp{stage, at, w.shape()[0], w.shape()[1]};
        void *args[] = {&tp};
        s = dev_.launch(transpose[dtypeSize(w.dtype()) == 2 ? 0 : 1], static_cast<unsigned>((tp.cols + 31) / 32),
                        static_cast<unsigned>((tp.rows + 31) / 32), 1, 32, 8, 0, nullptr, args,
                        "the transpose of a weight for the GEMV kernels");
        if (s)
          s = dev_.check(a.cuCtxSynchronize(), "transposing a weight for the GEMV kernels");
      }
      at += (w.numBytes() + 255) / 256 * 256;
    }
    if (stage)
      a.cuMemFree(stage);
    return s;
  }

  // The run's host-side inputs, laid out in the pinned staging buffer.
  void stage(const ProgramRun &run) {
    uint8_t *s = static_cast<uint8_t *>(staging_);
    const int64_t T = static_cast<int64_t>(run.inputIds.size());
    staged_.ids = s;
    std::memcpy(s, run.inputIds.data(), T * 8);
    s += T * 8;
    staged_.positions = s;
    std::memcpy(s, run.positions.data(), T * 8);
    s += T * 8;
    staged_.rows = s;
    std::memcpy(s, run.logitRows.data(), run.logitRows.size() * 8);
    s += T * 8;
    staged_.places = s;
    GencTokenPlace *pl = reinterpret_cast<GencTokenPlace *>(s);
    // slot -> one past its last position in the run (reused: no allocation per step).
    if (run.kind != ProgramKind::Encode) {
      for (const TokenPlace &tp : run.attention.tokens)
        runEnd_.at(tp.slot) = 0;
      for (const TokenPlace &tp : run.attention.tokens)
        runEnd_[tp.slot] = std::max(runEnd_[tp.slot], tp.position + 1);
    }
    for (int64_t t = 0; t < T; ++t) {
      GencTokenPlace g{};
      if (run.kind == ProgramKind::Encode) {
        for (const SourceSegment &sg : run.attention.segments)
          if (t >= sg.start && t < sg.start + sg.len)
            g.segStart = sg.start, g.segLen = sg.len;
        g.position = t;
      } else {
        const TokenPlace &tp = run.attention.tokens[t];
        g.position = tp.position;
        g.cachedBefore = tp.cachedBefore;
        g.runEnd = runEnd_.at(tp.slot);
        g.slot = tp.slot;
        g.entry = run.attention.crossEntryOfToken.empty() ? 0 : run.attention.crossEntryOfToken[t];
        g.writeRegion = tp.write.region;
        g.writeIndex = tp.write.index;
      }
      pl[t] = g;
    }
    if (shared_ && run.kind != ProgramKind::Encode)
      stagePairs(run);
    s += T * sizeof(GencTokenPlace);
    // attn_N_prefill's tiles: up to 64 consecutive tokens of one slot (one
    // @encode segment) each.
    staged_.tiles = s;
    const bool encode = run.kind == ProgramKind::Encode;
    ctx_.tileCount = prefillTiles(
        T, [&](int64_t t) { return encode ? pl[t].segStart : static_cast<long long>(pl[t].slot); },
        reinterpret_cast<int32_t *>(s));
    s += T * 8;
    staged_.crossLengths = s;
    std::memcpy(s, run.attention.crossLengths.data(), run.attention.crossLengths.size() * 8);
    staged_.crossCount = static_cast<int64_t>(run.attention.crossLengths.size());
    staged_.tokens = T;
    staged_.rowCount = static_cast<int64_t>(run.logitRows.size());
  }

  // Shared prompts: each slot of the run gets the pairs of its cached
  // positions (the Session's KvRows) and of this run's new ones (their
  // places' writes) in its row of the pinned mirror, which goes up whole.
  // A slot's row is rewritten from the first pair the mirror may not hold
  // (KvRows::unchangedSince): after a reorder, what it took of its parent;
  // else only what it appended since. Slots outside the run keep stale rows,
  // which this run does not read.
  void stagePairs(const ProgramRun &run) {
    int32_t *mirror = static_cast<int32_t *>(pairsHost_);
    const int64_t stride = kv_.maxLength;
    static_assert(sizeof(KvRef) == 8, "a pair is the kernels' int2");
    for (const TokenPlace &tp : run.attention.tokens) {
      int32_t *row = mirror + tp.slot * stride * 2;
      if (tp.position == tp.cachedBefore) { // the slot's first token of the run (one piece a slot)
        const KvRows &rows = *run.attention.rows;
        uint64_t &stamp = mirrorStamp_[size_t(tp.slot)];
        int64_t &held = mirrorLen_[size_t(tp.slot)];
        held = std::min({held, rows.unchangedSince(tp.slot, stamp), tp.cachedBefore});
        std::memcpy(row + 2 * held, rows.of(tp.slot).data() + held, size_t(tp.cachedBefore - held) * 8);
        stamp = rows.stamp(tp.slot);
        held = tp.cachedBefore;
      }
      row[2 * tp.position] = tp.write.region;
      row[2 * tp.position + 1] = tp.write.index;
    }
    // All of it: a decode step's graph replays its copy as captured, so the
    // range may not depend on which slots the step holds.
    staged_.pairsFrom = 0;
    staged_.pairsCount = kv_.slots * stride;
  }

  Status enqueueInputs(const ProgramRun &run) {
    const DriverApi &a = *dev_.api;
    const int64_t T = staged_.tokens;
    struct Copy {
      CUdeviceptr dst;
      const void *src;
      int64_t bytes;
    } copies[] = {
        {ctx_.arguments["input_ids"], staged_.ids, T * 8},
        {ctx_.arguments["positions"], staged_.positions, T * 8},
        {ctx_.arguments["logit_rows"], staged_.rows, staged_.rowCount * 8},
        {ctx_.places, staged_.places, T * static_cast<int64_t>(sizeof(GencTokenPlace))},
        {ctx_.tiles, staged_.tiles, ctx_.tileCount * 8},
        {ctx_.crossLengths, staged_.crossLengths, staged_.crossCount * 8},
        {ctx_.pairs + static_cast<CUdeviceptr>(staged_.pairsFrom) * 8,
         static_cast<const int32_t *>(pairsHost_) + staged_.pairsFrom * 2, staged_.pairsCount * 8},
    };
    for (const Copy &c : copies)
      if (c.bytes > 0)
        if (Status s = dev_.check(a.cuMemcpyHtoDAsync(c.dst, c.src, c.bytes, stream_), "copying the run's inputs"); !s)
          return s;
    return Status::ok();
  }

  static int64_t rowsOf(const ProgramRun &run) {
    return run.kind == ProgramKind::Decode ? static_cast<int64_t>(run.inputIds.size())
                                           : static_cast<int64_t>(run.logitRows.size());
  }

  // One run: its inputs staged, the steps enqueued (a decode step replays
  // its graph), and what comes back in the pinned buffer: the logits, or with
  // Greedy (and Tokens) each row's token (i64) then its log-softmax (f32), or
  // with Beams each row's beamK_ candidates (GencBeamCand).
  // GENC_CUDA_ATTN_TRACE=1 with a plan compiled under GENC_ATTN_TRACE=1
  // (codegen/AttentionKernels.h): the last layer's decode and merge stage
  // stamps of block (0, 0), in ns after split 0's entry, and the cycles
  // each stage took inside its block.
  void printAttentionTrace() {
    const char *e = genrt::env::get("GENC_CUDA_ATTN_TRACE");
    size_t bytes = 0;
    const CUdeviceptr at = e && std::string(e) == "1" ? mod_.global("genc_attn_trace", bytes) : 0;
    unsigned long long t[10][16] = {};
    if (!at || bytes != sizeof t || dev_.api->cuMemcpyDtoH(t, at, sizeof t) != CUDA_SUCCESS) {
      if (e)
        std::fprintf(stderr, "genrun: no attention trace in this plan (compile it with GENC_ATTN_TRACE=1)\n");
      return;
    }
    const unsigned long long base = t[0][0];
    for (int row = 0; row < 10; ++row) {
      if (!t[row][0] && !t[row][2])
        continue;
      std::fprintf(stderr, "genrun: attention trace %s %d: ns", row == 9 ? "merge" : "split", row == 9 ? 0 : row);
      for (int i = 0; i < 8; ++i)
        if (t[row][i])
          std::fprintf(stderr, " %d:%lld", i, static_cast<long long>(t[row][i] - base));
      std::fprintf(stderr, " | cycles");
      for (int i = 1; i < 8; ++i)
        if (t[row][8 + i] && t[row][7 + i])
          std::fprintf(stderr, " %d:%lld", i, static_cast<long long>(t[row][8 + i] - t[row][7 + i]));
      std::fprintf(stderr, "\n");
    }
  }

  int64_t decodeReplays_ = 0;
  Status execute(const ProgramRun &run, ChoiceKind choice) {
    if (Status s = groupIntact(); !s)
      return s;
    const CompiledProgram &cp = programs_.at(run.program->name);
    stage(run);
    const int64_t R = rowsOf(run);
    if (R * plan_->model.vocabSize * 4 > logitsBytes_)
      return Status::error("the run's logits exceed the staging buffer");
    if (R > 0) // a prefill run that ends no chunk returns nothing
      ++(choice == ChoiceKind::Logits ? logitRuns_ : choiceRuns_);
    Status s = Status::ok();
    if (run.kind == ProgramKind::Decode && useGraphs_ && !ctx_.syncEachStep)
      s = replayOrCapture(cp, run, R, choice);
    else
      s = enqueue(cp, run, R, choice);
    if (s)
      s = waitStream("running " + run.program->name + " (GENC_CUDA_SYNC=1 names the kernel)");
    if (s && run.kind == ProgramKind::Decode && useGraphs_ && !ctx_.syncEachStep && ++decodeReplays_ == 8)
      return diagnoseStep(cp, run, R, choice);
    return s;
  }

  // Diagnostics at the 8th decode step: the attention trace, and with
  // GENC_CUDA_REPLAY_TIMING=N its graph replayed N times more back to back,
  // timed by events, to stderr — the GPU's step with no host turn between
  // steps, against genrun's decode ms/token, which has one. The same
  // inputs, the same cache row: each replay of a greedy step writes what
  // the step wrote. Not for the other choices (token passes keep state on
  // the device a replay would advance) nor a tree-attention group (the
  // other GPUs would not join the collectives).
  Status diagnoseStep(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice) {
    printAttentionTrace();
    static const int n = [] {
      const char *e = genrt::env::get("GENC_CUDA_REPLAY_TIMING");
      return e ? std::atoi(e) : 0;
    }();
    if (n <= 0)
      return Status::ok();
    if (choice != ChoiceKind::Greedy || ctx_.tree.nccl) {
      std::fprintf(stderr, "genrun: GENC_CUDA_REPLAY_TIMING times plain greedy steps on one GPU only\n");
      return Status::ok();
    }
    const DriverApi &a = *dev_.api;
    CUevent ev[2] = {};
    for (CUevent &e : ev)
      if (Status s = dev_.check(a.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"); !s)
        return s;
    Status s = dev_.check(a.cuEventRecord(ev[0], stream_), "cuEventRecord");
    for (int i = 0; s && i < n; ++i)
      s = replayOrCapture(cp, run, R, choice);
    if (s)
      s = dev_.check(a.cuEventRecord(ev[1], stream_), "cuEventRecord");
    if (s)
      s = dev_.check(a.cuEventSynchronize(ev[1]), "cuEventSynchronize");
    float ms = 0;
    if (s)
      s = dev_.check(a.cuEventElapsedTime(&ms, ev[0], ev[1]), "cuEventElapsedTime");
    if (s)
      std::fprintf(stderr, "genrun: %d back-to-back replays of the %lld-token decode step: %.4f ms each\n", n,
                   static_cast<long long>(run.inputIds.size()), ms / n);
    for (CUevent e : ev)
      a.cuEventDestroy(e);
    return s;
  }

  // A GPU of a group runs only while its communicator stands (an abort
  // frees it; the captured graphs still name it).
  Status groupIntact() const {
    return ctx_.tree.nccl && !ctx_.tree.comm
               ? Status::error("this GPU's tree-attention group was aborted (or never joined)")
               : Status::ok();
  }

  // The stream's work done. In a tree-attention group a collective waits
  // on the other GPUs: poll, and give up (aborting the communicator, which
  // ends its kernels) after GENC_NCCL_TIMEOUT_S seconds or an NCCL error.
  Status waitStream(const std::string &what) {
    const DriverApi &a = *dev_.api;
    StepContext::Tree &tr = ctx_.tree;
    if (!tr.nccl)
      return dev_.check(a.cuStreamSynchronize(stream_), what.c_str());
    if (Status s = groupIntact(); !s)
      return s;
    const auto start = std::chrono::steady_clock::now();
    for (int spin = 0;; ++spin) {
      const CUresult r = a.cuStreamQuery(stream_);
      if (r == CUDA_SUCCESS)
        return Status::ok();
      if (r != CUDA_ERROR_NOT_READY)
        return dev_.check(r, what.c_str());
      int async = kNcclSuccess;
      tr.nccl->commGetAsyncError(tr.comm, &async);
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if ((async != kNcclSuccess && async != kNcclInProgress) || waited > rank_.timeoutS) {
        Status why = async != kNcclSuccess && async != kNcclInProgress
                         ? tr.nccl->check(async, "a collective")
                         : Status::error("NCCL: GPU " + std::to_string(tr.shard) + " had no answer from the other " +
                                         std::to_string(tr.shards - 1) + " in " + std::to_string(int(rank_.timeoutS)) +
                                         " s (GENC_NCCL_TIMEOUT_S); communicator aborted");
        tr.nccl->commAbort(tr.comm);
        tr.comm = nullptr;
        return Status::error(why.message() + " while " + what);
      }
      if (spin > 2000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      else
        std::this_thread::yield();
    }
  }

  // Inputs, every step, and the logits (or greedy's choices) back to the
  // pinned buffer.
  Status enqueue(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice) {
    if (Status s = enqueueInputs(run); !s)
      return s;
    if (Status s = runSteps(cp, ctx_, run); !s)
      return s;
    const DriverApi &a = *dev_.api;
    if (choice == ChoiceKind::Logits)
      return dev_.check(a.cuMemcpyDtoHAsync(logitsHost_, cp.outputs.at(0), R * plan_->model.vocabSize * 4, stream_),
                        "copying the logits back");
    if (cp.outputStored.at(0) != DType::F32)
      return Status::error("greedy on the device needs f32 logits");
    if (choice == ChoiceKind::Tokens) {
      if (tokenCheck_) // the raw logits too, for the host reference
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

  // A decode step of T tokens is the same launches with the same pointers
  // every time (the token ids, places and logits go through the pinned
  // staging buffers): captured once per T, then replayed.
  Status replayOrCapture(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice) {
    const DriverApi &a = *dev_.api;
    // (T, choice, beams' k, rules a row and renormalization, or the token
    // passes' set): kBeamMaxK < 64, a row's rules (its beams) < 32, the
    // passes 12 bits.
    const int64_t beams = beamK_ | (beamRenormalize_ ? 64 : 0) | beamShare_ << 7;
    const int64_t key = (staged_.tokens * 4 + static_cast<int64_t>(choice)) * 4096 +
                        (choice == ChoiceKind::Beams ? beams : choice == ChoiceKind::Tokens ? tokenPasses_ : 0);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      if (Status s = dev_.check(a.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                                "cuStreamBeginCapture");
          !s)
        return s;
      Status s = enqueue(cp, run, R, choice);
      CUgraph graph = nullptr;
      Status e = dev_.check(a.cuStreamEndCapture(stream_, &graph), "capturing the decode step");
      if (!s)
        return s;
      if (!e)
        return e;
      CUgraphExec exec = nullptr;
      Status i = dev_.check(a.cuGraphInstantiate(&exec, graph, 0), "instantiating the decode step's graph");
      a.cuGraphDestroy(graph);
      if (!i)
        return i;
      it = graphs_.emplace(key, exec).first;
    }
    return dev_.check(a.cuGraphLaunch(it->second, stream_), "launching the decode step's graph");
  }

  // @encode's K and V of each cross layer ([1, KVH, S, D], head-major) into
  // the cross cache entry ([entry, KVH, max_length, D]).
  Status storeCross(const CompiledProgram &cp, const ProgramRun &run) {
    const KvLayout &kv = plan_->kv;
    const int64_t S = static_cast<int64_t>(run.inputIds.size()), es = static_cast<int64_t>(dtypeSize(kv.dtype));
    if (cp.outputs.size() != 2 * kv.crossLayers.size() || !segmentsFit(run.attention.segments, S, kv))
      return Status::error("encode: @encode's results do not match the cross-attention cache");
    for (size_t l = 0; l < kv.crossLayers.size(); ++l) {
      const CrossCacheLayer &L = kv.crossLayers[l];
      if (cp.outputStored.at(2 * l) != kv.dtype)
        return Status::error("encode: @encode stores the cross K/V as " + std::string(dtypeName(cp.outputStored[2 * l])) +
                             ", the cache holds " + dtypeName(kv.dtype));
      if (kv.crossI8) { // codes and a scale a row, made on the device
        const CUdeviceptr base = ctx_.cross + kv.crossLayerByteBase(l);
        for (int i = 0; i < 2; ++i)
          for (const SourceSegment &sg : run.attention.segments) {
            GencCrossStoreParams q{};
            q.src = cp.outputs[2 * l + i];
            q.codes = base + kv.crossRowByte(l, i == 1, sg.entry, 0, 0);
            q.scales = base + kv.crossScaleByte(l, i == 1, sg.entry, 0, 0);
            q.srcTokens = S;
            q.segStart = sg.start;
            q.segLen = sg.len;
            q.capacity = kv.maxSourceLength;
            q.D = static_cast<int>(L.headDim);
            q.srcBytes = static_cast<int>(es);
            q.bf16 = kv.dtype == DType::BF16;
            void *args[] = {&q};
            if (Status s = dev_.launch(crossStoreFn_, static_cast<unsigned>(sg.len), static_cast<unsigned>(L.kvHeads),
                                       1, 32, 1, 0, stream_, args, "genc_cross_store_i8");
                !s)
              return s;
          }
        continue;
      }
      // [1, KVH, S, D] -> each segment's rows into its entry: one 2-D copy
      // per segment, layer and half.
      for (int i = 0; i < 2; ++i)
        for (const SourceSegment &sg : run.attention.segments) {
          CUDA_MEMCPY2D c{};
          c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
          c.srcDevice = cp.outputs[2 * l + i] + static_cast<CUdeviceptr>(sg.start * L.headDim * es);
          c.srcPitch = static_cast<size_t>(S * L.headDim * es);
          c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
          c.dstDevice = ctx_.cross + kv.crossLayerByteBase(l) + kv.crossRowByte(l, i == 1, sg.entry, 0, 0);
          c.dstPitch = static_cast<size_t>(kv.maxSourceLength * L.headDim * es);
          c.WidthInBytes = static_cast<size_t>(sg.len * L.headDim * es);
          c.Height = static_cast<size_t>(L.kvHeads);
          if (Status s = dev_.check(dev_.api->cuMemcpy2DAsync(&c, stream_), "storing the encoded source"); !s)
            return s;
        }
    }
    return Status::ok();
  }

  struct Staged {
    void *ids = nullptr, *positions = nullptr, *rows = nullptr, *places = nullptr, *tiles = nullptr,
         *crossLengths = nullptr;
    int64_t tokens = 0, rowCount = 0, crossCount = 0;
    int64_t pairsFrom = 0, pairsCount = 0; // shared prompts: pair entries to upload
  };

  std::shared_ptr<const Plan> plan_;
  KvLayout kv_; // the plan's caches, or this GPU's shard of them
  TreeRank rank_; // where this GPU stands in its tree-attention group (none: ranks 1, no NCCL)
  Device dev_;
  DeviceMemory mem_;
  KernelModule mod_;
  std::unique_ptr<Gemm> gemm_;
  CUstream stream_ = nullptr;
  StepContext ctx_;
  std::vector<CUdeviceptr> weightPtr_;
  std::map<std::string, CompiledProgram> programs_;
  std::map<int64_t, CUgraphExec> graphs_;
  bool useGraphs_ = true;
  CUfunction greedyFn_ = nullptr, beamFn_ = nullptr, beamNormFn_ = nullptr, tokenFn_ = nullptr;
  CUfunction crossStoreFn_ = nullptr; // an i8 cross cache's rows (genc_cross_store_i8)
  std::vector<int64_t> runEnd_ = std::vector<int64_t>(static_cast<size_t>(plan_->kv.slots), 0);
  CUdeviceptr choice_ = 0; // greedy's choices: i64 tokens [rows], then f32 log-softmax [rows]
  void *staging_ = nullptr, *logitsHost_ = nullptr;
  int64_t stagingBytes_ = 0, logitsBytes_ = 0, partialRows_ = 0, greedyParts_ = 1;
  bool shared_ = false;        // shared prompts: the plan's layout, read through the pairs
  int64_t pairsBytes_ = 0;     // "kv pairs": int2 [slots, max_length]
  void *pairsHost_ = nullptr;  // its pinned mirror
  // Per slot: the KvRows stamp and the count of leading pairs its mirror
  // row holds for it (stagePairs).
  std::vector<uint64_t> mirrorStamp_;
  std::vector<int64_t> mirrorLen_;
  int64_t choiceRuns_ = 0, logitRuns_ = 0; // runs by where their tokens were chosen (--stats)
  int64_t beamIdsCap_ = 0, beamStagingBytes_ = 0, beamK_ = 1; // beam candidates (0 ids: none)
  int64_t beamRules_ = 0, beamShare_ = 1;                      // the rules' capacity; rules a logits row
  bool beamRenormalize_ = false;
  void *beamStaging_ = nullptr;
  // Greedy with processors and sampling on the device (genc_token_pass).
  int64_t tokenIdsCap_ = 0, tokenStagingBytes_ = 0;
  uint32_t tokenPasses_ = 0;
  void *tokenStaging_ = nullptr, *checkLogits_ = nullptr;
  std::unique_ptr<TokenCheck> tokenCheck_; // GENC_CUDA_TOKENS_CHECK=1
  KvCopier copier_; // beam reordering (plans of more than one beam)
  Staged staged_;
};

} // namespace
} // namespace cuda

std::unique_ptr<Executor> makeCudaExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           Status &err) {
  const char *force = genrt::env::get("GENC_TREE_FORCE");
  if (opts.gpus > 1 || (force && std::string(force) == "1"))
    return cuda::makeTreeExecutor(std::move(plan), opts, err);
  auto e = std::make_unique<cuda::CudaExecutor>(std::move(plan));
  err = e->init(nullptr);
  if (!err)
    return nullptr;
  return e;
}

namespace cuda {
std::unique_ptr<TreeReplica> makeCudaReplica(std::shared_ptr<const Plan> plan, const TreeRank &rank, Status &err) {
  auto e = std::make_unique<CudaExecutor>(std::move(plan));
  err = e->init(&rank);
  if (!err)
    return nullptr;
  return e;
}
} // namespace cuda

} // namespace genrt

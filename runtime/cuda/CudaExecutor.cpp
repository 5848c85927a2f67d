// The CUDA executor (CudaExecutorImpl.h): loading and closing, and a run
// from its staged inputs to the wait. At load: open the GPU, check that
// everything fits, upload the weights, lay out one arena (the plan's
// offsets), the KV caches (runtime/kv/KvLayout.h) and the attention
// workspaces, and resolve every op of every program to a step: a cuBLASLt
// GEMM, a generated fused kernel, an attention kernel family, a device copy
// (views), or host-computed dims. A run stages its token ids, positions and
// token places in pinned memory, copies them over, runs the steps on one
// stream and copies the logits (or the tokens chosen on the device) back; a
// decode step of a given shape is captured once as a CUDA graph and
// replayed after that. The options are read once, in makeCudaExecutor.
#include "runtime/cuda/CudaExecutor.h"

#include "runtime/cuda/CudaExecutorImpl.h"
#include "runtime/cuda/KernelAbi.h"
#include "runtime/cuda/TokenChoice.h"
#include "runtime/cuda/TreeExecutor.h"
#include "runtime/cuda/WeightUpload.h"

#include <cstdio>
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

} // namespace

CudaExecutor::CudaExecutor(std::shared_ptr<const Plan> plan, const CudaOptions &options)
    : plan_(std::move(plan)), options_(options), mem_(dev_), graphs_(dev_), prefillGraphs_(dev_) {}

CudaExecutor::~CudaExecutor() {
  if (prefillGraphs_.enabled) // an A/B switch: what it did goes to stderr, as GENC_CUDA_PROFILE's table
    std::fprintf(stderr, "genrun: @prefill graphs: %lld captured, %lld replayed, %lld runs kernel by kernel\n",
                 static_cast<long long>(prefillGraphs_.captures), static_cast<long long>(prefillGraphs_.replays),
                 static_cast<long long>(prefillGraphs_.eager));
  graphs_.clear();
  prefillGraphs_.clear();
  if (channel_)
    channel_->close();
  if (stream_)
    dev_.api->cuStreamDestroy(stream_);
  gemm_.reset();
  mod_.unload();
  dev_.close();
}

Status CudaExecutor::init(NcclChannel *channel) {
  if (Status s = Device::open(channel ? channel->rank().ordinal : 0, dev_); !s)
    return s;
  // Shared prompts (the beams read their prompt by (region, index) pairs)
  // on one GPU, unless GENC_CUDA_SHARED_PROMPTS=0 (A/B runs): else each
  // slot keeps its whole sequence and a reorder copies rows (the plan's
  // kernels take either: `pairs` 0). Tree attention shards whole sequences.
  shared_ = !channel && plan_->kv.sharesPrompts() && options_.debug.sharedPrompts && kernelsSharePrompts();
  kv_ = shared_ ? plan_->kv : plan_->kv.unshared();
  if (channel)
    if (Status s = plan_->kv.unshared().sharded(channel->rank().ranks, kv_); !s)
      return Status::error("tree attention over " + std::to_string(channel->rank().ranks) + " GPUs: " + s.message());
  if ((!plan_->cubins.empty() || !plan_->ptx.empty()) && plan_->kernelAbi != kGencKernelAbi)
    return Status::error("the plan's GPU kernels follow kernel contract " + std::to_string(plan_->kernelAbi) +
                         ", this genrun launches contract " + std::to_string(kGencKernelAbi) +
                         "; recompile the model with a matching genc");
  if (Status s = mod_.load(dev_, *plan_); !s)
    return s;
  if (Status s = Gemm::open(dev_, kGemmWorkspace, options_.cublasLt, gemm_); !s)
    return s;
  if (Status s = dev_.check(dev_.api->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s)
    return s;
  if (Status s = planMemory(channel != nullptr); !s)
    return s;
  if (Status s = mem_.allocate(); !s)
    return s;
  if (channel) {
    StepContext::Tree &tr = ctx_.tree;
    tr.nccl = &channel->api();
    tr.channel = channel;
    tr.shards = channel->rank().ranks;
    tr.shard = channel->rank().rank;
    tr.lse = mem_.at("tree lse");
    tr.lseMax = mem_.at("tree lse max");
    tr.packed = mem_.at("tree packed");
    tr.combine = options_.treeCombine;
    // The group is joined later (NcclChannel::join), once every GPU has
    // loaded: a GPU that fails here must leave none waiting in NCCL.
    channel->bind(dev_, stream_, tr.lse, tr.lseMax);
    channel_ = channel;
  }
  // The tickets start at zero; each launch leaves them so. The caches too:
  // rows a run never wrote hold zeros, not whatever the memory held
  // (a benchmark that skips the prefill reads them).
  for (const char *t : {"attention tickets", "gemv tickets", "greedy tickets", "beam tickets", "token tickets",
                        "token hist", "kv cache"})
    if (mem_.bytes(t) > 0)
      if (Status s = dev_.check(dev_.api->cuMemsetD8(mem_.at(t), 0, static_cast<size_t>(mem_.bytes(t))), "zeroing tickets");
          !s)
        return s;
  // The GEMV kernels for products of <= 8 rows on sm_90 and newer, where
  // they start before the kernel ahead of them ends (dependent launch): the
  // 1.1B Llama's batch-1 step 1.377 -> 1.313 ms on an H100 (2026-11-24;
  // docs/performance.md, "GEMV kernels by default on sm_90"); before
  // dependent launch they made the replayed step 4.7% slower (H100,
  // 2026-11-23; docs/performance.md, "Decode on the GPU: second pass").
  // GENC_CUDA_GEMV=0 / =1 forces cuBLASLt / the GEMVs.
  ctx_.gemv = options_.gemv >= 0 ? options_.gemv == 1 : dev_.major >= 9;
  // Of one row only: its loop re-reads the activations for every row from
  // L1, and on the 1.1B decode step (f16, H100, 2026-11-24) cuBLASLt won
  // from 2 rows on: 1.395 vs 1.546 ms/token at 2, 1.444 vs 3.407 at 8
  // (docs/performance.md, "The GEMV kernels were slower than cuBLASLt from
  // two rows on"). GENC_CUDA_GEMV_ROWS=N (1..8) sets the limit.
  ctx_.gemvRows = options_.gemvRows;
  // From there up to 16 rows (decode batches, beams, a server's slots), the
  // 16-bit products take the tensor-core GEMV entries: the weights read
  // once, the SwiGLU in their epilogue (docs/cuda.md, "GEMV on tensor
  // cores"); more rows go to cuBLASLt, which won from 32 on an H100
  // (2026-12-07). GENC_CUDA_GEMV_MMA=N (up to 64) moves the line, for
  // plans that have entries above 16 rows (GENC_GEMV_MMA_WIDE=1 at compile
  // time: _mmaw32, _mmaw64; the form of 2026-12-08 not yet timed, docs/cuda.md).
  ctx_.gemvMmaRows = options_.gemvMmaRows;
  // Where a product's groups of 32 weight rows leave SMs idle (the 1.1B's
  // 2,048-wide O and down: 64 groups for 132 SMs), 2 to 4 blocks split K,
  // the last to finish adding the parts (GENC_CUDA_GEMV_MMA_SPLIT=N for
  // every product).
  ctx_.gemvMmaSplit = options_.gemvMmaSplit;
  ctx_.gemvMmaWide = options_.gemvMmaWide;
  ctx_.gemvParts = mem_.at("gemv parts");
  ctx_.gemvTickets = mem_.at("gemv tickets");
  // 4/8-bit products: the GEMV up to 3 rows, the tensor cores up to 64
  // (decode batches), the tiled kernel above; GENC_CUDA_NBITS_GEMV_ROWS and
  // GENC_CUDA_NBITS_ROWS move the lines for A/B runs.
  ctx_.nbitsGemvRows = options_.nbitsGemvRows;
  ctx_.nbitsCoreRows = options_.nbitsCoreRows;
  // A one-row GEMV runs the add + norm kernel before it and the SwiGLU
  // after it itself (three kernel boundaries fewer a Llama layer);
  // GENC_CUDA_GEMV_FUSION=0 / norm / glu for A/B runs.
  ctx_.gemvFusion = options_.debug.gemvFusion;
  ctx_.decodeKernel = options_.debug.decodeKernel;
  ctx_.prefillKernel = options_.debug.prefillKernel;
  ctx_.prefillDecode = options_.debug.prefillDecode;
  ctx_.streamKernel = options_.streamKernel;
  ctx_.mergeRows = options_.mergeRows;
  ctx_.weightTransposed.assign(plan_->weights.size(), 0);
  if (ctx_.gemv)
    chooseTransposedWeights(*plan_, ctx_.weightTransposed);
  if (Status s = uploadWeights(dev_, mod_, *plan_, mem_.at("weights"), ctx_.weightTransposed, weightPtr_); !s)
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
  if (beamIdsCap_ == 0 || !options_.debug.beamsOnDevice || !mod_.function("genc_beam_topk", beamFn_) ||
      !mod_.function("genc_beam_norm", beamNormFn_))
    beamFn_ = nullptr; // no beams, or a plan from a genc without them: candidates on the host
  initTokenChoice();
  for (const char *a : {"input_ids", "positions", "logit_rows"})
    ctx_.arguments[a] = mem_.at(std::string("argument ") + a);
  for (const auto &[name, prog] : plan_->programs)
    if (Status s = compileProgram(prog, ctx_, mod_, weightPtr_, programs_[name]); !s)
      return s;
  // The step kernel, where the plan has one and this GPU runs it (its
  // reasons otherwise go to --stats).
  if (const Program *decode = plan_->program("decode_step"))
    if (Status s = step_.init(ctx_, mod_, *decode, programs_.at("decode_step"), weightPtr_, options_.stepKernel,
                               options_.debug.stepTrace, options_.debug.stepStallOp);
        !s)
      return s;
  if (options_.debug.stepCheck && step_.ready()) { // both paths a step, kernel by kernel first: no graphs
    report_.stepCheck = std::make_unique<StepCheck>();
    useGraphs_ = false;
  }
  if (Status s = gemm_->warm(stream_); !s)
    return s;
  // A plain wait: nothing of NCCL is on the stream yet, and a GPU of a
  // tree-attention group has not joined it (the channel's wait would refuse).
  if (Status s = dev_.check(dev_.api->cuStreamSynchronize(stream_), "loading cuBLASLt's kernels"); !s)
    return s;
  if (Status s = mem_.pinned(stagingBytes_, staging_); !s)
    return s;
  if (Status s = mem_.pinned(logitsBytes_, logitsHost_); !s)
    return s;
  if (shared_) { // (region 0, index 0) where nothing is staged yet: a row of the cache
    if (Status s = mem_.pinned(pairs_.bytes, pairs_.host); !s)
      return s;
    std::memset(pairs_.host, 0, static_cast<size_t>(pairs_.bytes));
    pairs_.slotStamp.assign(size_t(kv_.slots), 0); // no KvRows stamp is 0
    pairs_.slotHeld.assign(size_t(kv_.slots), 0);
    if (Status s = dev_.check(dev_.api->cuMemsetD8(ctx_.pairs, 0, static_cast<size_t>(pairs_.bytes)), "cuMemsetD8");
        !s)
      return s;
  }
  if (beamFn_)
    if (Status s = mem_.pinned(beamStagingBytes_, beamStaging_); !s)
      return s;
  if (tokenFn_)
    if (Status s = mem_.pinned(tokenStagingBytes_, tokenStaging_); !s)
      return s;
  if (report_.tokenCheck)
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
  useGraphs_ = options_.debug.graphs && !report_.stepCheck;
  // (Not in a tree-attention group: its collectives were verified in the
  // decode steps' graphs only.)
  prefillGraphs_.enabled = useGraphs_ && options_.debug.prefillGraphs && !channel_;
  ctx_.syncEachStep = options_.debug.sync;
  ctx_.skipKinds = options_.debug.skipKinds;
  if (options_.debug.profile) {
    report_.profile = std::make_unique<StepProfile>();
    ctx_.profile = report_.profile.get();
    useGraphs_ = false;
    prefillGraphs_.enabled = false;
  }
  return Status::ok();
}

std::string CudaExecutor::deviceName() const {
  return "cuda: " + dev_.name + " (sm_" + std::to_string(dev_.arch()) + ", " + mod_.source() + ")";
}

std::string CudaExecutor::memoryReport() const { return mem_.report() + " (" + gemm_->version() + ")"; }

std::string CudaExecutor::choiceReport() const {
  return std::to_string(choiceRuns_) + " runs chose their tokens on the device, " + std::to_string(logitRuns_) +
         " copied their logits to the host; " +
         (step_.ready() ? "the step kernel ran " + std::to_string(step_.steps()) + " decode steps, one launch each"
                        : "decode steps kernel by kernel: " + step_.why()) +
         (prefillGraphs_.enabled ? "; @prefill graphs: " + std::to_string(prefillGraphs_.captures) + " captured, " +
                                       std::to_string(prefillGraphs_.replays) + " replayed"
                                 : "");
}

// Whether every self-attention op's kernels read rows through the pairs
// (genc set gpu_shared_prompts where it compiled them so): else the
// executor keeps a copy a beam, which any of them indexes.
bool CudaExecutor::kernelsSharePrompts() const {
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

Status CudaExecutor::encode(const ProgramRun &run) {
  if (Status s = groupIntact(); !s)
    return s;
  const CompiledProgram &cp = programs_.at(run.program->name);
  stage(run);
  if (Status s = enqueueInputs(run); !s)
    return s;
  if (Status s = runSteps(cp, ctx_, run); !s)
    return s;
  if (Status s = storeCross(ctx_, crossStoreFn_, cp, run); !s)
    return s;
  return waitStream("running encode (GENC_CUDA_SYNC=1 names the kernel)");
}

Status CudaExecutor::copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                               const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) {
  return cuda::copySlots(ctx_, copier_, shared_, dst, src, lengths, from);
}

// A GPU of a group runs only while its communicator stands.
Status CudaExecutor::groupIntact() const { return channel_ ? channel_->intact() : Status::ok(); }

// The stream's work done. In a tree-attention group a collective waits on
// the other GPUs: the channel polls, and gives up after GENC_NCCL_TIMEOUT_S.
Status CudaExecutor::waitStream(const std::string &what) {
  if (!channel_)
    return dev_.check(dev_.api->cuStreamSynchronize(stream_), what.c_str());
  return channel_->wait(what);
}

int64_t CudaExecutor::rowsOf(const ProgramRun &run) {
  return run.kind == ProgramKind::Decode ? static_cast<int64_t>(run.inputIds.size())
                                         : static_cast<int64_t>(run.logitRows.size());
}

// One run: its inputs staged, the steps enqueued (a decode step replays its
// graph), and what comes back in the pinned buffer (Choice).
Status CudaExecutor::execute(const ProgramRun &run, ChoiceKind choice) {
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
  const auto enqueueRun = [&] { return enqueue(cp, run, R, choice); };
  if (run.kind == ProgramKind::Decode && useGraphs_ && !ctx_.syncEachStep)
    s = graphs_.replayOrCapture({graphKey(choice)}, stream_, enqueueRun);
  else if (std::vector<int64_t> key; prefillGraphs_.wants(run.kind == ProgramKind::Prefill, ctx_.syncEachStep) &&
                                     prefillGraphs_.take(prefillKey(cp, run, choice), key))
    s = prefillGraphs_.replayOrCapture(key, stream_, enqueueRun);
  else
    s = enqueue(cp, run, R, choice);
  if (s)
    s = waitStream("running " + run.program->name + " (GENC_CUDA_SYNC=1 names the kernel)");
  if (s && step_.takes(run))
    s = step_.finish();
  // GENC_CUDA_ATTN_TRACE=1: the attention kernels' stamps of the 8th
  // decode step.
  if (s && run.kind == ProgramKind::Decode && useGraphs_ && !ctx_.syncEachStep && ++decodeReplays_ == 8 &&
      options_.debug.attnTrace)
    printAttentionTrace(dev_, mod_);
  return s;
}

// Inputs, every step, and the logits (or the chosen tokens) back to the
// pinned buffer.
Status CudaExecutor::enqueue(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice) {
  if (Status s = enqueueInputs(run); !s)
    return s;
  if (report_.stepCheck && step_.takes(run))
    return checkStep(cp, run, R, choice);
  if (Status s = step_.takes(run) ? step_.enqueue(ctx_, run) : runSteps(cp, ctx_, run); !s)
    return s;
  return enqueueChoice(cp, R, choice);
}

// GENC_CUDA_STEP_CHECK=1: the step kernel by kernel on a poisoned arena, its
// logits kept; then the step kernel on a poisoned arena (each writes the
// same k, v into the cache); the logits compared; the run's choice from the
// step kernel's (whose error record the run reads after its wait).
Status CudaExecutor::checkStep(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice) {
  const DriverApi &a = *dev_.api;
  const int64_t V = plan_->model.vocabSize, bytes = R * V * 4;
  std::vector<float> ref(static_cast<size_t>(R * V)), got(ref.size());
  auto poison = [&] {
    return dev_.check(a.cuMemsetD8Async(ctx_.arena, 0xff, static_cast<size_t>(plan_->arenaBytes()), stream_),
                      "poisoning the arena");
  };
  auto logits = [&](std::vector<float> &into) -> Status {
    if (Status s = dev_.check(a.cuMemcpyDtoHAsync(into.data(), cp.outputs.at(0), static_cast<size_t>(bytes), stream_),
                              "copying the logits back (GENC_CUDA_STEP_CHECK)");
        !s)
      return s;
    return dev_.check(a.cuStreamSynchronize(stream_), "GENC_CUDA_STEP_CHECK");
  };
  if (cp.outputStored.at(0) != DType::F32)
    return Status::error("GENC_CUDA_STEP_CHECK needs f32 logits");
  if (Status s = poison(); !s)
    return s;
  if (Status s = runSteps(cp, ctx_, run); !s)
    return s;
  if (Status s = logits(ref); !s)
    return s;
  if (Status s = poison(); !s)
    return s;
  if (Status s = step_.enqueue(ctx_, run); !s)
    return s;
  if (Status s = logits(got); !s)
    return s;
  report_.stepCheck->add(ref.data(), got.data(), R, V);
  return enqueueChoice(cp, R, choice);
}

} // namespace cuda

std::unique_ptr<Executor> makeCudaExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           Status &err) {
  cuda::CudaOptions options;
  if (err = cuda::readCudaOptions(options); !err)
    return nullptr;
  if (opts.gpus > 1 || options.debug.treeForce)
    return cuda::makeTreeExecutor(std::move(plan), opts, options, err);
  auto e = std::make_unique<cuda::CudaExecutor>(std::move(plan), options);
  err = e->init(nullptr);
  if (!err)
    return nullptr;
  return e;
}

namespace cuda {
std::unique_ptr<Executor> makeCudaReplica(std::shared_ptr<const Plan> plan, const CudaOptions &options,
                                          NcclChannel &channel, Status &err) {
  auto e = std::make_unique<CudaExecutor>(std::move(plan), options);
  err = e->init(&channel);
  if (!err)
    return nullptr;
  return e;
}
} // namespace cuda

} // namespace genrt

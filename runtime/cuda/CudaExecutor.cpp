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

#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/CudaSteps.h"
#include "runtime/cuda/DeviceMemory.h"

#include <algorithm>

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

class CudaExecutor final : public Executor {
public:
  explicit CudaExecutor(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)), mem_(dev_) {}
  ~CudaExecutor() override {
    for (const auto &[kind, v] : ctx_.profileMs)
      std::fprintf(stderr, "genrun: profile: %-20s %10.3f ms over %6lld steps (%.4f ms each)\n", kind.c_str(),
                   v.first, static_cast<long long>(v.second), v.first / std::max<int64_t>(1, v.second));
    for (auto &[t, g] : graphs_)
      if (g)
        dev_.api->cuGraphExecDestroy(g);
    if (stream_)
      dev_.api->cuStreamDestroy(stream_);
    gemm_.reset();
    mod_.unload();
    dev_.close();
  }

  Status init() {
    if (Status s = Device::open(0, dev_); !s)
      return s;
    if (Status s = mod_.load(dev_, *plan_); !s)
      return s;
    if (Status s = Gemm::open(dev_, kGemmWorkspace, gemm_); !s)
      return s;
    if (Status s = dev_.check(dev_.api->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s)
      return s;
    if (Status s = planMemory(); !s)
      return s;
    if (Status s = mem_.allocate(); !s)
      return s;
    if (Status s = uploadWeights(); !s)
      return s;
    ctx_.dev = &dev_;
    ctx_.gemm = gemm_.get();
    ctx_.stream = stream_;
    ctx_.plan = plan_.get();
    ctx_.arena = mem_.at("arena");
    ctx_.kv = mem_.at("kv cache");
    ctx_.cross = mem_.at("cross kv cache");
    ctx_.scratch = mem_.at("attention scratch");
    ctx_.partial = mem_.at("attention partials");
    ctx_.partialRows = partialRows_;
    ctx_.places = mem_.at("token places");
    ctx_.crossLengths = mem_.at("cross lengths");
    for (const char *a : {"input_ids", "positions", "logit_rows"})
      ctx_.arguments[a] = mem_.at(std::string("argument ") + a);
    for (const auto &[name, prog] : plan_->programs)
      if (Status s = compileProgram(prog, ctx_, mod_, weightPtr_, programs_[name]); !s)
        return s;
    if (Status s = mem_.pinned(stagingBytes_, staging_); !s)
      return s;
    if (Status s = mem_.pinned(logitsBytes_, logitsHost_); !s)
      return s;
    const char *g = std::getenv("GENC_CUDA_GRAPHS");
    useGraphs_ = !(g && std::string(g) == "0");
    const char *sync = std::getenv("GENC_CUDA_SYNC");
    ctx_.syncEachStep = sync && std::string(sync) == "1";
    const char *prof = std::getenv("GENC_CUDA_PROFILE");
    ctx_.profile = prof && std::string(prof) == "1";
    if (ctx_.profile)
      useGraphs_ = false;
    return Status::ok();
  }

  std::string deviceName() const override {
    return "cuda: " + dev_.name + " (sm_" + std::to_string(dev_.arch()) + ", " + mod_.source() + ")";
  }
  int64_t memoryBytes() const override { return mem_.totalBytes(); }
  std::string memoryReport() const override { return mem_.report() + " (" + gemm_->version() + ")"; }

  Status run(const ProgramRun &run, float *logits) override {
    const int64_t T = static_cast<int64_t>(run.inputIds.size());
    const bool decode = run.kind == ProgramKind::Decode;
    const int64_t R = decode ? T : static_cast<int64_t>(run.logitRows.size());
    const CompiledProgram &cp = programs_.at(run.program->name);
    stage(run);
    const int64_t vocab = plan_->model.vocabSize;
    const int64_t bytes = R * vocab * static_cast<int64_t>(sizeof(float));
    if (bytes > logitsBytes_)
      return Status::error("the run's logits exceed the staging buffer");
    Status s = Status::ok();
    if (decode && useGraphs_ && !ctx_.syncEachStep) {
      s = replayOrCapture(cp, run, bytes);
    } else {
      s = enqueue(cp, run, bytes);
    }
    if (s)
      s = dev_.check(dev_.api->cuStreamSynchronize(stream_),
                     ("running " + run.program->name + " (GENC_CUDA_SYNC=1 names the kernel)").c_str());
    if (!s)
      return s;
    std::memcpy(logits, logitsHost_, static_cast<size_t>(bytes));
    return Status::ok();
  }

  Status encode(const ProgramRun &run) override {
    const CompiledProgram &cp = programs_.at(run.program->name);
    stage(run);
    if (Status s = enqueueInputs(run); !s)
      return s;
    if (Status s = runSteps(cp, ctx_, run); !s)
      return s;
    if (Status s = storeCross(cp, run); !s)
      return s;
    return dev_.check(dev_.api->cuStreamSynchronize(stream_), "running encode (GENC_CUDA_SYNC=1 names the kernel)");
  }

  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                   const std::vector<int64_t> &lengths) override {
    return copyCacheSlots(ctx_, mem_.at("reorder scratch"), dst, src, lengths);
  }

private:
  // Sizes every device buffer before allocating any.
  Status planMemory() {
    const Plan &p = *plan_;
    const KvLayout &kv = p.kv;
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
    mem_.plan("token places", maxT * static_cast<int64_t>(sizeof(GencTokenPlace)));
    mem_.plan("cross lengths", std::max<int64_t>(kv.crossEntries, 1) * 8);
    for (const char *a : {"input_ids", "positions", "logit_rows"})
      mem_.plan(std::string("argument ") + a, maxT * 8);
    int64_t layerMax = 0;
    for (size_t l = 0; l < kv.layers.size(); ++l)
      layerMax = std::max(layerMax, kv.layerElements(l) * static_cast<int64_t>(dtypeSize(kv.dtype)));
    if (p.model.maxBeams > 1)
      mem_.plan("reorder scratch", layerMax);
    stagingBytes_ = maxT * (3 * 8 + static_cast<int64_t>(sizeof(GencTokenPlace))) + kv.crossEntries * 8 + 64;
    logitsBytes_ = maxRows * p.model.vocabSize * 4;
    return Status::ok();
  }

  Status uploadWeights() {
    CUdeviceptr at = mem_.at("weights");
    for (const Tensor &w : plan_->weights) {
      weightPtr_.push_back(at);
      if (w.numBytes())
        if (Status s = dev_.check(dev_.api->cuMemcpyHtoD(at, w.rawData(), w.numBytes()), "uploading the weights"); !s)
          return s;
      at += (w.numBytes() + 255) / 256 * 256;
    }
    return Status::ok();
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
        g.slot = tp.slot;
        g.entry = run.attention.crossEntryOfToken.empty() ? 0 : run.attention.crossEntryOfToken[t];
      }
      pl[t] = g;
    }
    s += T * sizeof(GencTokenPlace);
    staged_.crossLengths = s;
    std::memcpy(s, run.attention.crossLengths.data(), run.attention.crossLengths.size() * 8);
    staged_.crossCount = static_cast<int64_t>(run.attention.crossLengths.size());
    staged_.tokens = T;
    staged_.rowCount = static_cast<int64_t>(run.logitRows.size());
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
        {ctx_.crossLengths, staged_.crossLengths, staged_.crossCount * 8},
    };
    for (const Copy &c : copies)
      if (c.bytes > 0)
        if (Status s = dev_.check(a.cuMemcpyHtoDAsync(c.dst, c.src, c.bytes, stream_), "copying the run's inputs"); !s)
          return s;
    return Status::ok();
  }

  // Inputs, every step, and the logits back to the pinned buffer.
  Status enqueue(const CompiledProgram &cp, const ProgramRun &run, int64_t logitBytes) {
    if (Status s = enqueueInputs(run); !s)
      return s;
    if (Status s = runSteps(cp, ctx_, run); !s)
      return s;
    return dev_.check(dev_.api->cuMemcpyDtoHAsync(logitsHost_, cp.outputs.at(0), logitBytes, stream_),
                      "copying the logits back");
  }

  // A decode step of T tokens is the same launches with the same pointers
  // every time (the token ids, places and logits go through the pinned
  // staging buffers): captured once per T, then replayed.
  Status replayOrCapture(const CompiledProgram &cp, const ProgramRun &run, int64_t logitBytes) {
    const DriverApi &a = *dev_.api;
    auto it = graphs_.find(staged_.tokens);
    if (it == graphs_.end()) {
      if (Status s = dev_.check(a.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                                "cuStreamBeginCapture");
          !s)
        return s;
      Status s = enqueue(cp, run, logitBytes);
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
      it = graphs_.emplace(staged_.tokens, exec).first;
    }
    return dev_.check(a.cuGraphLaunch(it->second, stream_), "launching the decode step's graph");
  }

  // @encode's K and V of each cross layer ([1, KVH, S, D], head-major) into
  // the cross cache entry ([entry, KVH, max_length, D]).
  Status storeCross(const CompiledProgram &cp, const ProgramRun &run) {
    const KvLayout &kv = plan_->kv;
    const int64_t S = static_cast<int64_t>(run.inputIds.size()), es = static_cast<int64_t>(dtypeSize(kv.dtype));
    if (cp.outputs.size() != 2 * kv.crossLayers.size() || run.crossEntry < 0 || run.crossEntry >= kv.crossEntries)
      return Status::error("encode: @encode's results do not match the cross-attention cache");
    int64_t layerOffset = 0;
    for (size_t l = 0; l < kv.crossLayers.size(); ++l) {
      const CrossCacheLayer &L = kv.crossLayers[l];
      if (cp.outputStored.at(2 * l) != kv.dtype)
        return Status::error("encode: @encode stores the cross K/V as " + std::string(dtypeName(cp.outputStored[2 * l])) +
                             ", the cache holds " + dtypeName(kv.dtype));
      for (int i = 0; i < 2; ++i) {
        CUDA_MEMCPY2D c{};
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = cp.outputs[2 * l + i];
        c.srcPitch = static_cast<size_t>(S * L.headDim * es);
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = ctx_.cross + (layerOffset + (i ? kv.crossLayerElements(l) : 0) + kv.crossOffset(l, run.crossEntry, 0, 0)) * es;
        c.dstPitch = static_cast<size_t>(kv.maxLength * L.headDim * es);
        c.WidthInBytes = c.srcPitch;
        c.Height = static_cast<size_t>(L.kvHeads);
        if (Status s = dev_.check(dev_.api->cuMemcpy2DAsync(&c, stream_), "storing the encoded source"); !s)
          return s;
      }
      layerOffset += 2 * kv.crossLayerElements(l);
    }
    return Status::ok();
  }

  struct Staged {
    void *ids = nullptr, *positions = nullptr, *rows = nullptr, *places = nullptr, *crossLengths = nullptr;
    int64_t tokens = 0, rowCount = 0, crossCount = 0;
  };

  std::shared_ptr<const Plan> plan_;
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
  void *staging_ = nullptr, *logitsHost_ = nullptr;
  int64_t stagingBytes_ = 0, logitsBytes_ = 0, partialRows_ = 0;
  Staged staged_;
};

} // namespace
} // namespace cuda

std::unique_ptr<Executor> makeCudaExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &,
                                           Status &err) {
  auto e = std::make_unique<cuda::CudaExecutor>(std::move(plan));
  err = e->init();
  if (!err)
    return nullptr;
  return e;
}

} // namespace genrt

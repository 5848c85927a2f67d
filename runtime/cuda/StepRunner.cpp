#include "runtime/cuda/StepRunner.h"

#include "runtime/cuda/StepKinds.h"
#include "runtime/plan/StepTrace.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace genrt::cuda {

namespace {

// A fused op's symbols and pointers as its kernel takes them (symbols, then
// a pointer per argument, then per result; a run of one token).
Status bodyPointers(const OpInfo &op, const ValueMap &vm, const Plan &plan, long long (&sym)[4],
                    unsigned long long (&ptr)[12], std::string &why) {
  const std::string body = attrStr(op.attrs, "body", "");
  auto k = std::find_if(plan.kernels.begin(), plan.kernels.end(), [&](const KernelInfo &x) { return x.name == body; });
  if (k == plan.kernels.end() || k->symbols.size() > 4 || op.operands.size() + op.results.size() > 12) {
    why = "the fused op at \"" + op.loc + "\" has no kernel the step kernel can call";
    return Status::error(why);
  }
  for (size_t i = 0; i < 4; ++i)
    sym[i] = 1;
  size_t at = 0;
  for (int32_t v : op.operands)
    ptr[at++] = vm.ptr(v);
  for (int32_t v : op.results)
    ptr[at++] = vm.ptr(v);
  return Status::ok();
}

} // namespace

StepRunner::~StepRunner() {
  if (!dev_)
    return;
  const DriverApi &a = *dev_->api;
  for (CUdeviceptr p : alloc_)
    a.cuMemFree(p);
  if (argsHost_)
    a.cuMemFreeHost(argsHost_);
  if (errorHost_)
    a.cuMemFreeHost(errorHost_);
}

Status StepRunner::build(StepContext &ctx, const Program &decode, const CompiledProgram &compiled,
                         const std::vector<CUdeviceptr> &weights, std::vector<GencStepOp> &ops, std::string &why) {
  const StepSchedule &s = *sched_;
  ValueMap vm{decode, ctx, weights};
  std::map<int32_t, const Step *> stepOf;
  for (const auto &st : compiled.steps)
    if (st->op >= 0 && st->kind != "combine")
      stepOf[st->op] = st.get();
  ops.assign(s.ops.size(), GencStepOp{});
  int64_t splits = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const StepOp &so = s.ops[i];
    GencStepOp &g = ops[i];
    std::memset(&g, 0, sizeof g);
    g.kind = static_cast<int>(so.kind);
    g.code = so.code;
    g.waits.n = static_cast<int>(so.waits.size());
    for (size_t w = 0; w < so.waits.size() && w < static_cast<size_t>(kStepMaxWaits); ++w) {
      g.waits.counter[w] = so.waits[w].counter;
      g.waits.need[w] = so.waits[w].need;
    }
    const OpInfo &op = decode.ops[size_t(so.op)];
    switch (so.kind) {
    case StepOpKind::Matvec: {
      const ValueInfo &wv = decode.values[size_t(op.operands[1])];
      // transpose_b: stored [N, K] already (a tied embedding table).
      const bool tb = attrInt(op.attrs, "transpose_b", 0) != 0;
      if (!tb && !ctx.weightTransposed[size_t(wv.index)]) {
        why = "the weight of " + so.name + " is not laid out [N, K] on the device (another op reads it)";
        return Status::ok();
      }
      const Tensor &wt = ctx.plan->weights[size_t(wv.index)];
      GencStepMatvec &m = g.mv;
      m.w = vm.ptr(op.operands[1]);
      m.K = wt.shape()[tb ? 1 : 0];
      m.N = wt.shape()[tb ? 0 : 1];
      m.rowBytes = so.rowBytes;
      m.rowsPerPage = s.rowsPerPage(so);
      m.glu = so.after >= 0;
      m.bias = op.operands.size() == 3 ? vm.ptr(op.operands[2]) : 0;
      m.y = so.after >= 0 ? vm.ptr(decode.ops[size_t(so.after)].results[0]) : vm.ptr(op.results[0]);
      if (so.before >= 0) {
        const OpInfo &pro = decode.ops[size_t(so.before)];
        if (Status st = bodyPointers(pro, vm, *ctx.plan, m.sym, m.ptr, why); !st)
          return Status::ok();
        m.consumed = -1;
        for (size_t r = 0; r < pro.results.size(); ++r)
          if (pro.results[r] == op.operands[0])
            m.consumed = static_cast<int>(r);
      } else {
        m.a = vm.ptr(op.operands[0]);
      }
      break;
    }
    case StepOpKind::Rows:
      if (Status st = bodyPointers(op, vm, *ctx.plan, g.rows.sym, g.rows.ptr, why); !st)
        return Status::ok();
      break;
    case StepOpKind::AttnDecode:
    case StepOpKind::AttnMerge: {
      auto it = stepOf.find(so.op);
      int64_t sp = 0;
      if (it == stepOf.end() ||
          !attentionDecodeParams(*it->second, ctx, s.maxRows, so.kind == StepOpKind::AttnDecode ? so.splits : 0,
                                 g.attn, sp)) {
        why = so.name + " has no decode kernel the step kernel can call";
        return Status::ok();
      }
      if (so.kind == StepOpKind::AttnDecode)
        splits = splits ? std::min(splits, sp) : sp;
      break;
    }
    }
  }
  splits_ = std::max<int64_t>(1, splits);
  return Status::ok();
}

Status StepRunner::init(StepContext &ctx, const KernelModule &mod, const Program &decode,
                        const CompiledProgram &compiled, const std::vector<CUdeviceptr> &weights, int mode,
                        int trace, int stallOp) {
  stallOp_ = stallOp;
  dev_ = ctx.dev;
  sched_ = &ctx.plan->step;
  const StepSchedule &s = *sched_;
  const Device &dev = *ctx.dev;
  if (mode == 0)
    return why_ = "the step kernel is off (GENC_CUDA_STEP=1 turns it on)", Status::ok();
  if (s.empty())
    return why_ = "the plan has no step schedule (genc's remarks say why)", Status::ok();
  if (dev.major < 9)
    return why_ = "the step kernel runs on sm_90 and newer", Status::ok();
  if (int64_t(dev.smCount) * s.blocksPerSm < s.blocks)
    return why_ = "the schedule's " + std::to_string(s.blocks) + " blocks exceed this GPU's " +
                  std::to_string(dev.smCount) + " SMs times " + std::to_string(s.blocksPerSm) + " an SM",
           Status::ok();
  if (ctx.tree.nccl || ctx.pairs)
    return why_ = "the step kernel runs on one GPU, without shared prompts", Status::ok();
  if (s.abi != kStepAbiDigest)
    return why_ = "the plan's step kernel takes its parameters in another form than this genrun gives them "
                  "(recompile the plan with this genc)",
           Status::ok();
  CUfunction fn = nullptr;
  if (!mod.function("genc_step", fn))
    return why_ = "the plan's module has no step kernel", Status::ok();
  if (s.sharedBytes > dev.maxSharedPerBlock)
    return why_ = "the step kernel's " + std::to_string(s.sharedBytes) + " bytes of shared memory exceed this GPU's",
           Status::ok();
  std::vector<GencStepOp> ops;
  std::string why;
  if (Status st = build(ctx, decode, compiled, weights, ops, why); !st || !why.empty())
    return why_ = why, st;
  const DriverApi &a = *dev.api;
  if (Status st = dev.check(a.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 static_cast<int>(s.sharedBytes)),
                            "cuFuncSetAttribute (the step kernel)");
      !st)
    return st;
  // The kernel was built for the schedule's block (its launch bounds; a
  // block of another size stops in the kernel): an edited thread count.
  int maxThreads = 0;
  if (Status st = dev.check(a.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
                            "cuFuncGetAttribute (the step kernel)");
      !st)
    return st;
  if (maxThreads < stepBlockThreads(s))
    return Status::error("the plan's step kernel was built for blocks of " + std::to_string(maxThreads) +
                         " threads, its schedule says " + std::to_string(stepBlockThreads(s)));
  // Every block resident at once, as its waits need: the schedule's blocks
  // an SM must fit one (registers and shared memory).
  int perSm = 0;
  if (Status st = dev.check(a.cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, fn, stepBlockThreads(s),
                                                                          static_cast<size_t>(s.sharedBytes)),
                            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      !st)
    return st;
  if (perSm < s.blocksPerSm)
    return why_ = std::to_string(s.blocksPerSm) + " blocks of the step kernel do not fit an SM (" +
                  std::to_string(perSm) + " do)",
           Status::ok();
  std::vector<GencStepItem> items;
  for (const StepItem &it : s.items)
    items.push_back({it.op, it.first, it.count});
  // The blocks' lists as the compute warps read them: entry k is item
  // order[k] with its op's waits (one load an item, taken an item ahead).
  std::vector<GencStepTask> tasks(s.order.size());
  for (size_t k = 0; k < s.order.size(); ++k) {
    const StepItem &it = s.items[size_t(s.order[k])];
    GencStepTask &t = tasks[k];
    std::memset(&t, 0, sizeof t);
    t.item = s.order[k];
    t.op = it.op;
    t.first = it.first;
    t.count = it.count;
    t.waits = ops[size_t(it.op)].waits;
  }
  auto upload = [&](const void *host, size_t bytes, CUdeviceptr &out) -> Status {
    if (Status st = dev.check(a.cuMemAlloc(&out, std::max<size_t>(bytes, 16)), "cuMemAlloc (the step kernel)"); !st)
      return st;
    alloc_.push_back(out);
    if (host)
      return dev.check(a.cuMemcpyHtoD(out, host, bytes), "copying the step kernel's tables");
    return dev.check(a.cuMemsetD8(out, 0, std::max<size_t>(bytes, 16)), "cuMemsetD8");
  };
  if (Status st = upload(ops.data(), ops.size() * sizeof(GencStepOp), ops_); !st)
    return st;
  if (Status st = upload(items.data(), items.size() * sizeof(GencStepItem), items_); !st)
    return st;
  if (Status st = upload(s.order.data(), s.order.size() * sizeof(int32_t), order_); !st)
    return st;
  if (Status st = upload(tasks.data(), tasks.size() * sizeof(GencStepTask), tasks_); !st)
    return st;
  if (Status st = upload(s.blockStart.data(), s.blockStart.size() * sizeof(int32_t), starts_); !st)
    return st;
  if (Status st = upload(nullptr, s.ops.size() * 4, counters_); !st)
    return st;
  if (Status st = upload(nullptr, 4, done_); !st)
    return st;
  if (Status st = upload(nullptr, sizeof(GencStepArgs), args_); !st)
    return st;
  if (Status st = upload(nullptr, sizeof(GencStepError), error_); !st)
    return st;
  traceLevel_ = trace;
  if (trace)
    if (Status st = upload(nullptr, s.items.size() * kStepStamps * sizeof(uint64_t), trace_); !st)
      return st;
  void *h = nullptr;
  if (Status st = dev.check(a.cuMemAllocHost(&h, sizeof(GencStepArgs)), "cuMemAllocHost"); !st)
    return st;
  argsHost_ = static_cast<GencStepArgs *>(h);
  if (Status st = dev.check(a.cuMemAllocHost(&h, sizeof(GencStepError)), "cuMemAllocHost"); !st)
    return st;
  errorHost_ = static_cast<GencStepError *>(h);
  std::memset(errorHost_, 0, sizeof(GencStepError));
  fn_ = fn;
  return Status::ok();
}

bool StepRunner::takes(const ProgramRun &run) const {
  return fn_ && run.kind == ProgramKind::Decode && static_cast<int64_t>(run.inputIds.size()) <= sched_->maxRows &&
         !run.inputIds.empty();
}

Status StepRunner::enqueue(StepContext &ctx, const ProgramRun &run) {
  const DriverApi &a = *dev_->api;
  // The arguments go up with the run's inputs (a graph replays the copy
  // from this pinned buffer, which each step rewrites first).
  argsHost_->tokens = static_cast<long long>(run.inputIds.size());
  argsHost_->splits = splits_;
  if (Status s = dev_->check(a.cuMemcpyHtoDAsync(args_, argsHost_, sizeof(GencStepArgs), ctx.stream),
                             "copying the step kernel's arguments");
      !s)
    return s;
  GencStepParams p{ops_,
                   items_,
                   order_,
                   starts_,
                   counters_,
                   done_,
                   args_,
                   error_,
                   static_cast<long long>(sched_->ops.size()),
                   kStepTimeoutNs,
                   trace_,
                   stallOp_,
                   tasks_};
  void *args[] = {&p};
  if (Status s = dev_->check(a.cuLaunchKernel(fn_, static_cast<unsigned>(sched_->blocks), 1, 1,
                                              static_cast<unsigned>(stepBlockThreads(*sched_)), 1, 1,
                                              static_cast<unsigned>(sched_->sharedBytes), ctx.stream, args, nullptr),
                             "launching the step kernel");
      !s)
    return s;
  return dev_->check(a.cuMemcpyDtoHAsync(errorHost_, error_, sizeof(GencStepError), ctx.stream),
                     "copying the step kernel's error record back");
}

Status StepRunner::finish() {
  ++steps_;
  Status s = check();
  if (s && trace_ && steps_ == 8)
    printTrace();
  return s;
}

Status StepRunner::check() const {
  if (!errorHost_ || errorHost_->code == 0)
    return Status::ok();
  const GencStepError &e = *errorHost_;
  const StepSchedule &s = *sched_;
  auto what = [&](int i) {
    return "step op " + std::to_string(i) + " (" +
           (i >= 0 && i < static_cast<int>(s.ops.size()) ? s.ops[size_t(i)].name : std::string("?")) + ")";
  };
  std::string msg = "the step kernel's item " + std::to_string(e.item) + " of " + what(e.op) + " waited past " +
                    std::to_string(kStepTimeoutNs / 1000000) + " ms for " + what(e.counter) + ": " +
                    std::to_string(e.have) + " of its " + std::to_string(e.need) + " items done";
  // The wait that timed out may be downstream of the op that stalled: the
  // kernel leaves the counters as they were, and the first op (in program
  // order) not done although its own waits were met is where it began.
  const size_t n = s.ops.size();
  std::vector<uint32_t> have(n);
  std::vector<int64_t> need(n, 0);
  for (const StepItem &it : s.items)
    ++need[size_t(it.op)];
  const DriverApi &a = *dev_->api;
  if (a.cuMemcpyDtoH(have.data(), counters_, n * sizeof(uint32_t)) == CUDA_SUCCESS) {
    for (size_t i = 0; i < n; ++i) {
      if (int64_t(have[i]) >= need[i])
        continue;
      bool met = true;
      for (const StepWait &w : s.ops[i].waits)
        met = met && w.counter >= 0 && size_t(w.counter) < n && int64_t(have[size_t(w.counter)]) >= w.need;
      if (!met)
        continue;
      if (int(i) != e.counter)
        msg += "; the stall began at " + what(int(i)) + ", whose waits were met: " + std::to_string(have[i]) +
               " of its " + std::to_string(need[i]) + " items done";
      break;
    }
    // Counters back to zero for a later launch (genrun stops on this error;
    // a library caller may not).
    (void)a.cuMemsetD8(counters_, 0, n * sizeof(uint32_t));
  }
  return Status::error(msg);
}

// The 8th step's stamps (runtime/plan/StepTrace.h), by op kind, then with
// GENC_CUDA_STEP_TRACE=2 op by op.
void StepRunner::printTrace() {
  const StepSchedule &s = *sched_;
  std::vector<uint64_t> t(s.items.size() * kStepStamps);
  if (!dev_->check(dev_->api->cuMemcpyDtoH(t.data(), trace_, t.size() * sizeof(uint64_t)), "the step trace"))
    return;
  auto print = [](const std::string &table, const char *first) {
    for (size_t at = 0; at < table.size();) {
      const size_t nl = table.find('\n', at);
      std::fprintf(stderr, "genrun: step trace%s%s\n", at ? ": " : first, table.substr(at, nl - at).c_str());
      at = nl == std::string::npos ? table.size() : nl + 1;
    }
  };
  print(stepTraceByKind(s, t), " (decode step 8): ");
  if (traceLevel_ >= 2) {
    std::fprintf(stderr, "genrun: step trace op by op (decode step 8; the floor: each op's weight bytes at the "
                         "memory's peak, %.0f GB/s):\n",
                 dev_->memoryBytesPerUs / 1e3);
    print(stepTraceByOp(s, t, dev_->memoryBytesPerUs), ": ");
  }
}

} // namespace genrt::cuda

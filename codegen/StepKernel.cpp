#include "codegen/StepKernel.h"

#include "codegen/AttentionKernels.h"
#include "codegen/CudaSyntax.h"
#include "codegen/GemvKernels.h"
#include "codegen/StepKernelTemplates.h"
#include "passes/analysis/Storage.h"
#include "runtime/plan/Epilogue.h"
#include "runtime/json/Json.h"
#include "runtime/plan/StepSchedule.h"
#include "runtime/plan/StepTrace.h"
#include "runtime/cuda/StepAbi.h"
#include "runtime/Env.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace genc {
namespace {

using genrt::StepOp;
using genrt::StepOpKind;
using genrt::StepSchedule;

constexpr int64_t kStaticReserve = 24 << 10; // the attention routines' and the kernel's own static arrays

int64_t align(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

const CudaKernel *kernelOf(const std::vector<CudaKernel> &kernels, const std::string &name) {
  auto k = std::find_if(kernels.begin(), kernels.end(), [&](const CudaKernel &c) { return c.name == name; });
  return k == kernels.end() ? nullptr : &*k;
}

// The routines' text, one per distinct signature, and the ops' cases.
class Emitter {
public:
  Emitter(Module &m, Function &f, DType act, const std::vector<CudaKernel> &kernels, StepSchedule &s)
      : m_(m), f_(f), act_(act), kernels_(kernels), s_(s) {
    for (auto &o : f.ops())
      ops_.push_back(o.get());
  }

  // Gives each op its case; false (with `why`) where one has no routine.
  bool emit(std::string &why) {
    for (StepOp &op : s_.ops) {
      std::string sig, body;
      if (!routine(op, sig, body, why))
        return false;
      auto [it, fresh] = codeOf_.emplace(sig, static_cast<int32_t>(codeOf_.size()));
      op.code = it->second;
      if (fresh)
        routines_ << "// ---- routine " << it->second << ": " << sig << "\n" << body;
    }
    s_.codes = static_cast<int32_t>(codeOf_.size());
    return layout(why);
  }

  std::string code() const {
    std::ostringstream c;
    c << "\n// ==== the step kernel (codegen/StepKernel.cpp) ====\n"
      << genrt::cuda::kGencStepAbiSource << "\n"
      << "static constexpr int GENC_STEP_THREADS = " << s_.threads << ", GENC_STEP_ROWS = " << s_.maxRows
      << ", GENC_STEP_BLOCK = " << genrt::stepBlockThreads(s_) << ";\n"
      << "static constexpr int GENC_STEP_TEAM_RELEASE = " << genrt::env::choice("GENC_STEP_TEAM_RELEASE", {0, 1}, 1) << ";\n"
      << "static constexpr int GENC_STEP_SYNC_CHECK = " << genrt::env::choice("GENC_STEP_SYNC_CHECK", {0, 1}, 0) << ";\n"
      << "static constexpr int GENC_STEP_COUNT_LAST = " << genrt::env::choice("GENC_STEP_COUNT_LAST", {0, 1}, 1) << ";\n"
      << "static constexpr int GENC_STEP_L2_AHEAD = "
      << genrt::env::choice("GENC_STEP_L2_AHEAD", {0, 2, 4, 8, 16, 32}, 0) << ";\n"
      << stepKernelTemplates() << "\n";
    for (const auto &b : bodies_)
      c << b.second;
    c << "static constexpr int GENC_STEP_PAGES = " << s_.pages << ";\n"
      << "static constexpr long long GENC_STEP_PAGE = " << s_.pageBytes << "LL;\n"
      << "static constexpr long long GENC_STEP_X_OFF = " << xOff_ << "LL, GENC_STEP_RING_OFF = " << ringOff_ << "LL;\n"
      << "static constexpr int GENC_STEP_RED = " << red_ << ";\n"
      << "static constexpr int GENC_STEP_STAMPS = " << genrt::kStepStamps << "; // runtime/plan/StepTrace.h\n"
      << routines_.str() << epiStores() << kernel();
    return c.str();
  }

private:
  // A case's body, and the signature that dedups it.
  bool routine(const StepOp &op, std::string &sig, std::string &body, std::string &why) {
    Op *ir = ops_[size_t(op.op)];
    switch (op.kind) {
    case StepOpKind::Matvec:
      return matvec(op, ir, sig, body, why);
    case StepOpKind::Rows:
      return rows(ir, sig, body, why);
    case StepOpKind::AttnDecode:
    case StepOpKind::AttnMerge:
      return attention(op, ir, sig, body, why);
    }
    why = "an unknown step op";
    return false;
  }

  std::string head(int32_t code) const {
    return "static __device__ void genc_step_code" + std::to_string(code) +
           "(GencStepRing &ring, const GencStepParams &sp, const GencStepOp &o, const GencStepItem &it,\n"
           "    unsigned char *smem, float *red, float *red32, const GencStepArgs &args) {\n";
  }
  int32_t nextCode(const std::string &sig) const {
    auto it = codeOf_.find(sig);
    return it == codeOf_.end() ? static_cast<int32_t>(codeOf_.size()) : it->second;
  }

  // A fused row body's step copy, once; its call with `row0`, `step`, the
  // op record's symbols and pointers (`rec`: "o.mv" or "o.rows"), and per
  // result the expression it writes to ("" : the record's pointer).
  bool bodyCall(const std::string &name, const std::string &row0, const std::string &step, const std::string &rec,
                const std::vector<std::string> &outs, std::string &call, std::string &why) {
    const CudaKernel *k = kernelOf(kernels_, name);
    if (!k || (k->mode != "rows" && k->mode != "elementwise") || k->stepRows.empty() || !k->sharedFloats.isConstant() ||
        k->inputs.size() + k->outputs.size() > 12 || k->symbols.size() > 4) {
      why = "the fused op " + name + " has no routine the step kernel can call";
      return false;
    }
    bodies_.emplace(name, k->stepRows);
    scratch_ = std::max(scratch_, k->sharedFloats.constant() * 4);
    const int64_t nt = std::min<int64_t>(k->blockSize, s_.threads);
    std::ostringstream c;
    c << "  " << name << "_step_rows<" << nt << ">(" << row0 << ", " << step << ", (float *)smem, red32";
    for (size_t i = 0; i < k->symbols.size(); ++i)
      c << ", " << (k->symbols[i] == "tokens" || k->symbols[i] == "rows" ? "args.tokens" : rec + ".sym[" + std::to_string(i) + "]");
    size_t at = 0;
    for (const auto &in : k->inputs)
      c << ", (const " << storageType(in.dtype) << " *)" << rec << ".ptr[" << at++ << "]";
    for (size_t r = 0; r < k->outputs.size(); ++r, ++at)
      c << ", " << (r < outs.size() && !outs[r].empty() ? outs[r]
                                                        : "(" + storageType(k->outputs[r].dtype) + " *)" + rec + ".ptr[" +
                                                              std::to_string(at) + "]");
    c << ");\n";
    call = c.str();
    return true;
  }

  bool matvec(const StepOp &op, Op *mm, std::string &sig, std::string &body, std::string &why) {
    genrt::Epilogue e;
    if (!genrt::parseEpilogue(mm->strAttr("epilogue", ""), e) || e.bias != (mm->numOperands() == 3)) {
      why = "a matmul epilogue the step kernel does not take";
      return false;
    }
    const DType a = storageDType(f_, mm->operand(0), act_), w = mm->operand(1)->dtype(),
                y = storageDType(f_, mm->result(0), act_),
                b = e.bias ? storageDType(f_, mm->operand(2), act_) : DType::F32;
    if (dtypeSize(w) != 2 || dtypeSize(a) != 2) {
      why = "a matmul whose weight or input is not 16-bit";
      return false;
    }
    const int act = e.activation == "relu" ? 1 : e.activation == "gelu_tanh" ? 2 : 0;
    if (!e.activation.empty() && !act) {
      why = "a matmul epilogue activation the step kernel does not take";
      return false;
    }
    std::string gluStmts, gluOut;
    DType outT = y;
    if (op.after >= 0 &&
        !gemvGluCode(m_, f_, mm, ops_[size_t(op.after)], kernels_, y, gluStmts, gluOut, outT)) {
      why = "a GLU after a matmul with no expression";
      return false;
    }
    std::string proName;
    int64_t consumed = -1;
    if (op.before >= 0) {
      Op *pro = ops_[size_t(op.before)];
      proName = pro->strAttr("body", "");
      consumed = mm->operand(0)->resultIndex();
    }
    // The tensor cores take the product where K is a multiple of 32 and x and
    // the weight are of one type (genc_step_matvec_mma); the routine then
    // holds no CUDA-core loop (a routine per form: the kernel's code size
    // counts, an SM's instruction cache holding a fraction of it).
    const int64_t kDim = mm->operand(1)->shape()[mm->intAttr("transpose_b", 0) ? 1 : 0].constant();
    const bool mma = a == w && kDim % 32 == 0;
    std::ostringstream k;
    k << "matvec " << storageStruct(a) << " " << storageStruct(w) << " " << storageStruct(y) << " "
      << storageStruct(b) << " bias " << e.bias << " act " << act << (mma ? " mma" : "");
    if (!proName.empty())
      k << " after " << proName << "." << consumed;
    if (op.after >= 0)
      k << " glu " << ops_[size_t(op.after)]->strAttr("body", "") << " -> " << storageStruct(outT);
    sig = k.str();
    const int32_t code = nextCode(sig);
    const std::string epi = "genc_step_epi" + std::to_string(code);
    std::ostringstream c;
    c << "struct " << epi << " {\n  static constexpr int GLU = " << (op.after >= 0) << ", CODE = " << code << ";\n"
      << "  // output n of row t; a row of y holds the op's outputs (N, or N / 2 after a GLU)\n"
      << "  static __device__ __forceinline__ void store(const GencStepMatvec &m, long long t, long long n, float g,\n"
      << "                                               float u) {\n"
      << "    typedef " << storageStruct(y) << " Y;\n    typedef " << storageStruct(b) << " B;\n";
    auto actOf = [&](const std::string &x) {
      return act == 1 ? "fmaxf(" + x + ", 0.f)"
             : act == 2 ? "0.5f * (" + x + ") * (1.f + tanhf(0.7978845608028654f * ((" + x + ") + 0.044715f * (" + x +
                              ") * (" + x + ") * (" + x + "))))"
                        : x;
    };
    const std::string bn = e.bias ? " + B::ld(((const typename B::S *)m.bias)[n])" : "";
    if (op.after < 0) {
      c << "    const float v = g" << bn << ";\n"
        << "    ((typename Y::S *)m.y)[t * m.N + n] = Y::st(" << actOf("v") << ");\n";
    } else {
      const std::string bu = e.bias ? " + B::ld(((const typename B::S *)m.bias)[m.N / 2 + n])" : "";
      c << "    const float vg = g" << bn << ", vu = u" << bu << ";\n"
        << "    const float t0 = Y::ld(Y::st(" << actOf("vg") << "));\n"
        << "    const float t1 = Y::ld(Y::st(" << actOf("vu") << "));\n"
        << gluStmts << "    ((" << storageType(outT) << " *)m.y)[t * (m.N / 2) + n] = " << storageStruct(outT)
        << "::st(" << gluOut << ");\n";
    }
    c << "  }\n};\n" << head(code) << "  typedef " << storageStruct(a) << " A;\n"
      << "  typename A::S *xs = (typename A::S *)(smem + GENC_STEP_X_OFF);\n";
    if (!proName.empty()) {
      const CudaKernel *pk = kernelOf(kernels_, proName);
      std::vector<std::string> outs(pk ? pk->outputs.size() : 0);
      for (size_t r = 0; r < outs.size(); ++r)
        outs[r] = static_cast<int64_t>(r) == consumed
                      ? "(" + storageType(pk->outputs[r].dtype) + " *)xs"
                      : "it.first == 0 ? (" + storageType(pk->outputs[r].dtype) + " *)o.mv.ptr[" +
                            std::to_string(pk->inputs.size() + r) + "] : nullptr";
      std::string call;
      if (!bodyCall(proName, "0", "1", "o.mv", outs, call, why))
        return false;
      if (pk->outputs[size_t(consumed)].dtype != a) {
        why = "a row op before a matmul whose result is not the matmul's input storage";
        return false;
      }
      c << "  // the row op before the product, its result the product reads into xs\n" << call;
    } else {
      c << "  genc_step_row_in<A>(xs, o.mv, (int)args.tokens);\n";
    }
    c << "  genc_step_sync();\n"
      << "  genc_step_matvec<A, " << storageStruct(w) << ", GENC_STEP_PAGES, GENC_STEP_PAGE, " << epi << ", "
      << (mma ? "true" : "false") << ">(ring, sp, o.mv, it, xs, (int)args.tokens);\n}\n";
    body = c.str();
    xBytes_ = std::max(xBytes_, kDim * static_cast<int64_t>(dtypeSize(a)));
    const int64_t rpp = s_.rowsPerPage(op);
    red_ = std::max<int64_t>(red_, 4 * rpp * (op.after >= 0 ? 2 : 1));
    return true;
  }

  bool rows(Op *op, std::string &sig, std::string &body, std::string &why) {
    const std::string name = op->strAttr("body", "");
    sig = "rows " + name;
    std::string call;
    if (!bodyCall(name, "it.first", "it.count", "o.rows", {}, call, why))
      return false;
    body = head(nextCode(sig)) + call + "}\n";
    return true;
  }

  bool attention(const StepOp &op, Op *ir, std::string &sig, std::string &body, std::string &why) {
    const std::string fam = ir->strAttr("gpu_kernel", "");
    if (fam.empty() || ir->intAttr("gpu_decode_heads_per_block", 0) <= 0 || ir->intAttr("gpu_decode_rows", 0) != 1 ||
        ir->intAttr("gpu_shared_prompts", 0) != 0) {
      why = "an attention op without the decode kernel the step kernel calls";
      return false;
    }
    scratch_ = std::max(scratch_, ir->intAttr("gpu_decode_shared_bytes", 0));
    std::ostringstream c;
    if (op.kind == StepOpKind::AttnDecode) {
      sig = "attention decode " + fam;
      c << head(nextCode(sig)) << "  constexpr int DPARTS = " << fam << "_cfg::GROUP_ALL / " << fam << "_cfg::DGROUP;\n"
        << "  for (long long t = 0; t < args.tokens; ++t)\n"
        << "    for (int y = it.first * DPARTS; y < (it.first + 1) * DPARTS; ++y) {\n"
        << "      genc_step_at((unsigned)t, (unsigned)y, (unsigned)it.count, (unsigned)args.splits);\n"
        << "      if (it.count < args.splits && threadIdx.x < 128) genc_attn_decode<" << fam << "_cfg, GencStepBlock>(o.attn);\n"
        << "    }\n}\n";
    } else {
      sig = "attention merge " + fam;
      const std::string cfg = fam + "_step_cfg";
      if (!stepCfgs_.count(cfg))
        stepCfgs_.insert(cfg);
      c << "struct " << cfg << " : " << fam << "_cfg { static constexpr int MTHREADS = " << s_.threads << "; };\n"
        << head(nextCode(sig)) << "  for (long long t = 0; t < args.tokens; ++t)\n"
        << "    for (int h = it.first; h < it.first + it.count; ++h) {\n"
        << "      genc_step_at((unsigned)t, (unsigned)h, 0u, (unsigned)args.splits);\n"
        << "      genc_attn_merge<" << cfg << ", GencStepBlock>(o.attn);\n"
        << "    }\n}\n";
    }
    body = c.str();
    return true;
  }

  // Dynamic shared memory: [scratch: attention tiles or a row body's floats]
  // [x: a product's input row] [the ring's pages].
  bool layout(std::string &why) {
    xOff_ = align(std::max<int64_t>(scratch_, 128), 128);
    // x holds every row of a step [rows][K]: fewer rows where they would
    // leave the SM's blocks fewer than 6 ring pages between them (the plan
    // then takes larger steps kernel by kernel); blocks sharing an SM share
    // its shared memory.
    const int64_t limit = genrt::stepSharedLimit(s_.blocksPerSm) - kStaticReserve;
    const int64_t minPages = std::max<int64_t>(2, 6 / s_.blocksPerSm);
    auto ringAt = [&] { return align(xOff_ + std::max<int64_t>(xBytes_ * s_.maxRows, 16), 1024); };
    while (s_.maxRows > 1 && ringAt() + minPages * s_.pageBytes > limit)
      s_.maxRows /= 2;
    ringOff_ = ringAt();
    while (s_.pages > 2 && ringOff_ + s_.pages * s_.pageBytes > limit)
      --s_.pages;
    s_.sharedBytes = ringOff_ + s_.pages * s_.pageBytes;
    if (s_.sharedBytes > limit) {
      why = "the ring, the input row and the attention tiles need " + std::to_string(s_.sharedBytes) +
            " bytes of shared memory";
      return false;
    }
    red_ = std::max<int64_t>(red_, 32);
    return true;
  }

  // The stores of every product routine, one switch (genc_step_matvec_mma's
  // one copy calls it).
  std::string epiStores() const {
    std::ostringstream c;
    c << "static __device__ __noinline__ void genc_step_epi_store(int code, const GencStepMatvec &m, int t, int n, float g,\n"
      << "                                                        float u) {\n  switch (code) {\n";
    for (const auto &[sig, code] : codeOf_)
      if (sig.rfind("matvec ", 0) == 0)
        c << "  case " << code << ": genc_step_epi" << code << "::store(m, t, n, g, u); break;\n";
    c << "  default: break;\n  }\n}\n";
    return c.str();
  }

  std::string kernel() const {
    std::ostringstream c;
    // Registers: the SM's 65,536 over its blocks' threads, in the units of
    // 8 a thread they are given in, at most 255. (__launch_bounds__(288, 1)
    // left ptxas 168, as for a block of 384 threads, and the 8-warp kernel
    // spilled 424 bytes; at 224 it keeps 8.)
    const int64_t perThread = 65536 / (int64_t(genrt::stepBlockThreads(s_)) * s_.blocksPerSm);
    c << "extern \"C\" __global__ void __maxnreg__(" << std::min<int64_t>(255, perThread / 8 * 8)
      << ") genc_step(const GencStepParams sp) {\n"
      << R"(#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // bulk copies and their mbarriers: sm_90 and newer
  extern __shared__ __align__(1024) unsigned char genc_step_smem[];
  __shared__ __align__(8) unsigned long long full[GENC_STEP_PAGES], empty[GENC_STEP_PAGES];
  __shared__ float red[GENC_STEP_RED];
  __shared__ float red32[32];
  __shared__ int stop;
  __shared__ int issued; // the copy warp's count of pages issued
  // The current item's op record, copied while thread 0 waits: the
  // routines read its pointers and sizes again after every mbarrier wait (a
  // memory clobber), and from global memory each was a trip to L2 (L1 is
  // what the ring leaves of shared memory)
  __shared__ __align__(16) GencStepOp opS;
  // The current task and the next (tasks[k] and tasks[k + 1], taken while
  // thread 0 waits: an item starts with one trip to memory, not a chain of
  // order[k], items[order[k]] and its op's waits)
  __shared__ __align__(16) GencStepTask taskS[2];
  __shared__ unsigned syncAfter[GENC_STEP_THREADS / 32]; // GENC_STEP_SYNC_CHECK: each warp's count after an item
  __shared__ int syncOff;                                // an item whose counts differed was printed
  const int tid = threadIdx.x;
  if (blockDim.x != GENC_STEP_BLOCK) __trap(); // an edited plan: its barriers count this many
  const int *order = (const int *)sp.order, *starts = (const int *)sp.blockStart;
  const int first = starts[blockIdx.x], last = starts[blockIdx.x + 1];
  const GencStepOp *ops = (const GencStepOp *)sp.ops;
  const GencStepArgs args = *(const GencStepArgs *)sp.args;
  const GencStepTask *tasks = (const GencStepTask *)sp.tasks;
  GencStepRing ring{genc_step_smem + GENC_STEP_RING_OFF, full, empty, 0, &issued};
  // the first task (80 bytes: five 16-byte words)
  if (tid >= 32 && tid < 37 && first < last) ((uint4 *)&taskS[0])[tid - 32] = ((const uint4 *)(tasks + first))[tid - 32];
  if (tid == 0) {
    genc_step_starved = genc_step_unissued = genc_step_ringfull = genc_step_computing = 0;
    stop = issued = syncOff = 0;
    for (int w = 0; w < GENC_STEP_THREADS / 32; ++w) genc_step_nsync[w] = syncAfter[w] = 0;
    for (int i = 0; i < GENC_STEP_PAGES; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(genc_smem_addr(full + i)) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(genc_smem_addr(empty + i)), "r"(GENC_STEP_THREADS / 32) // every compute warp
                   : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (tid >= GENC_STEP_THREADS) { // the copy warp: the weight pages, from the first item on
    if (tid == GENC_STEP_THREADS) genc_step_produce<GENC_STEP_PAGES, GENC_STEP_PAGE>(ring, sp, first, last, &stop);
    __syncwarp();
  } else {
    for (int k = first; k < last; ++k) {
      const GencStepTask &task = taskS[(k - first) & 1];
      const int i = task.item;
      const GencStepItem it{task.op, task.first, task.count};
      unsigned long long *stamp = sp.trace && tid == 0 ? (unsigned long long *)sp.trace + GENC_STEP_STAMPS * i : nullptr;
      if (stamp) stamp[0] = genc_step_now();
      // Thread 0's acquire loads, then the compute warps' barrier: every
      // thread's loads after it see what the waited-for items wrote (as
      // CUTLASS's grid barrier). Meanwhile warps 1.. copy the op's record
      // and the next task (the other slot: its last reader was the item
      // before this one, which ended at a barrier).
      if (tid == 0 && !genc_step_wait(sp, task.waits, i, it.op)) stop = 1;
      for (int w = tid - 32; w >= 0 && w < (int)(sizeof(GencStepOp) / 8); w += GENC_STEP_THREADS - 32)
        ((unsigned long long *)&opS)[w] = ((const unsigned long long *)(ops + it.op))[w];
      if (tid >= 64 && tid < 69 && k + 1 < last)
        ((uint4 *)&taskS[(k + 1 - first) & 1])[tid - 64] = ((const uint4 *)(tasks + k + 1))[tid - 64];
      long long c1 = 0;
      if (stamp) {
        stamp[1] = genc_step_now();
        genc_step_starved = 0;
        genc_step_unissued = 0;
        genc_step_ringfull = 0;
        genc_step_computing = 0;
        genc_step_prologue = 0;
        genc_step_arrived = 0;
        c1 = genc_step_c1 = clock64();
      }
      genc_step_sync();
      if (GENC_STEP_SYNC_CHECK && tid == 0 && !syncOff) genc_step_sync_check(syncAfter, &syncOff, k > first ? order[k - 1] : -1);
      if (*(volatile int *)&stop) break;
      switch (opS.code) {
)";
    for (size_t i = 0; i < codeOf_.size(); ++i)
      c << "      case " << i << ": genc_step_code" << i
        << "(ring, sp, opS, it, genc_step_smem, red, red32, args); break;\n";
    c << R"(      default: break;
      }
      if (stamp) stamp[10] = (unsigned long long)(clock64() - c1); // thread 0's routine done
      if (sp.trace && (tid & 31) == 0) atomicAdd((unsigned long long *)&genc_step_arrived, (unsigned long long)clock64());
      genc_step_sync();
      if (GENC_STEP_SYNC_CHECK && (tid & 31) == 0) syncAfter[tid >> 5] = genc_step_nsync[tid >> 5];
      // the barrier, then a release add: the compute warps' writes go before
      // the count. The last compute warp's, not thread 0's: the release
      // waits for the block's stores to land (1.25% of the kernel's warp
      // samples on thread 0's warp alone, Nsight Compute, 2026-12-05), while
      // thread 0 goes on to the next item's waits.
      if (tid == (GENC_STEP_COUNT_LAST ? GENC_STEP_THREADS - 32 : 0) && it.op != sp.stallOp)
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"((unsigned *)sp.counters + it.op) : "memory");
      if (stamp) {
        stamp[2] = genc_step_now();
        stamp[3] = (unsigned long long)genc_step_starved / (GENC_STEP_THREADS / 32); // a warp's mean
        stamp[4] = (unsigned long long)(clock64() - c1);
        stamp[5] = (unsigned long long)genc_step_ringfull;
        stamp[6] = (unsigned long long)genc_step_computing / (GENC_STEP_THREADS / 32);
        stamp[7] = (unsigned long long)genc_step_prologue;
        // a warp's mean wait at the closing barrier: the barrier's clock less its mean arrival
        stamp[8] = (unsigned long long)(clock64() - (long long)(genc_step_arrived / (GENC_STEP_THREADS / 32)));
        stamp[9] = (unsigned long long)genc_step_unissued / (GENC_STEP_THREADS / 32);
      }
    }
  }
  __syncthreads(); // the copy warp's last copies have landed
  if (GENC_STEP_SYNC_CHECK && tid == 0 && !syncOff && last > first) genc_step_sync_check(syncAfter, &syncOff, order[last - 1]);
  if (tid == 0) {
    __threadfence();
    if (atomicAdd((unsigned *)sp.done, 1u) == gridDim.x - 1) { // the last block: counters back to zero
      // (after a failed wait they stay, for the runner to find the op that stalled)
      unsigned *c = (unsigned *)sp.counters;
      if (!*(volatile unsigned *)&((GencStepError *)sp.error)->code)
        for (long long i = 0; i < sp.nops; ++i) c[i] = 0u;
      *(volatile unsigned *)sp.done = 0u;
      __threadfence();
    }
  }
#else
  __trap(); // the executor runs the step kernel on sm_90 and newer only
#endif
}
)";
    return c.str();
  }

  Module &m_;
  Function &f_;
  DType act_;
  const std::vector<CudaKernel> &kernels_;
  StepSchedule &s_;
  std::vector<Op *> ops_;
  std::map<std::string, int32_t> codeOf_;
  std::map<std::string, std::string> bodies_;
  std::set<std::string> stepCfgs_;
  std::ostringstream routines_;
  int64_t scratch_ = 0, xBytes_ = 0, red_ = 0, xOff_ = 0, ringOff_ = 0;
};

} // namespace

StepKernel emitStepKernel(Module &m, DType activation, const std::vector<CudaKernel> &kernels) {
  StepKernel out;
  auto it = m.metadata().find("step.schedule");
  Function *f = m.function("decode_step");
  if (it == m.metadata().end() || it->second.empty() || !f)
    return out;
  genrt::json::Value v;
  StepSchedule s;
  if (!genrt::json::parse(it->second, v) || !genrt::parseStepSchedule(v, s)) {
    out.dropped = "the schedule does not read back";
    m.metadata().erase(it);
    return out;
  }
  Emitter e(m, *f, activation, kernels, s);
  std::string why;
  if (!e.emit(why)) {
    out.dropped = why;
    m.metadata().erase("step.schedule");
    return out;
  }
  s.abi = genrt::cuda::kStepAbiDigest; // the runner takes the kernel only with these parameters
  m.metadata()["step.schedule"] = genrt::stepScheduleJson(s);
  out.code = e.code();
  out.names.push_back("genc_step");
  return out;
}

} // namespace genc

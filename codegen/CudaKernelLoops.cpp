// Kernel assembly (codegen/CudaBuilder.h): the parameters in their storage
// dtypes, one loop per output (scalar, or vectorized along the last axis:
// codegen/CudaVectorize.h), the signature and the legend.
#include "codegen/CudaBuilder.h"
#include "runtime/Env.h"

namespace genc::cuda_detail {

DType Builder::paramDType(size_t i, bool output, DType body) const {
  if (!storage_)
    return body;
  const auto &list = output ? storage_->outputs : storage_->inputs;
  // A storage type of another domain (an int weight read as float) keeps the body's.
  return i < list.size() && domOf(list[i]) == domOf(body) ? list[i] : body;
}

// A norm/softmax group: one block per row; threads stride over the row, by
// vectors where the row length allows.
void Builder::rowsLoop(size_t i, std::string &code) {
  Value *v = f_.outputs()[i].value;
  const std::string &name = outNames_[i];
  DType dt = outDTypes_[i];
  const Shape &s = v->shape();
  Shape lead(s.begin(), s.end() - 1);
  Dim rows = numElements(lead), n = s.back();
  std::string pre, body, loads;
  Lanes ln;
  ln.width = isFloat(dt) ? vectorWidth(n, maxWidth_) : 1;
  ln.j = "j";
  jdep_.insert("j");
  if (ln.width > 1) {
    ln.j0 = "jbase";
    ln.lane = "lane";
    ln.loads = &loads;
    ln.indent = "      ";
    jdep_.insert(ln.j0);
    jdep_.insert(ln.lane);
  }
  useThreads(n, ln.width);
  preIndent_ = "    ";
  Ctx c{&pre, &body, ln.width > 1 ? "        " : "      ", 0, ln.width > 1 ? &ln : nullptr};
  c_ = &c;
  Index idx = delinearize("row", lead);
  idx.push_back("j");
  std::string r = val(v, idx);
  code += "  { // " + name + ": " + Type{dt, s}.str() + ", one block per row\n";
  code += "    const long long nrows = " + D(rows) + ", n = " + D(n) + ";\n";
  code += "    for (long long row = blockIdx.x; row < nrows; row += gridDim.x) {\n";
  code += pre;
  if (ln.width > 1) {
    std::string w = std::to_string(ln.width), res = fresh("r");
    code += "    for (long long jvec = threadIdx.x; jvec < " + intLit(n.constant() / ln.width) +
            "; jvec += blockDim.x) {\n";
    code += "      const long long jbase = jvec * " + intLit(ln.width) + ";\n" + loads;
    code += "      alignas(16) " + storageType(dt) + " " + res + "[" + w + "];\n";
    code += laneLoopText(ln, "      ", body + "        " + res + "[lane] = " + storeExpr(dt, r) + ";\n");
    code += "      genc_vstore(" + name + " + row * n + jbase, " + res + ");\n    }\n";
  } else {
    code += "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {\n" + body;
    code += "      " + name + "[row * n + j] = " + storeExpr(dt, r) + ";\n    }\n";
  }
  code += "    __syncthreads();\n    }\n  }\n";
  notes_.push_back(name + ": " + widthNote(ln, std::to_string(ln.width * dtypeSize(dt)) + "-byte " +
                                                 dtypeName(dt) + " stores", n, dt));
  sharedMax_ = mergeWork(sharedMax_, shared_);
}

// Elementwise: grid-stride over the output's elements, or over vectors of
// `width` elements of the last axis (a thread then knows its row and the
// first element of its vector, and the rest as for a row kernel).
void Builder::elementwiseLoop(size_t i, std::string &code) {
  Value *v = f_.outputs()[i].value;
  const std::string &name = outNames_[i];
  DType dt = outDTypes_[i];
  const Shape &s = v->shape();
  std::string pre, body, loads;
  Lanes ln;
  ln.width = isFloat(dt) && !s.empty() ? vectorWidth(s.back(), maxWidth_) : 1;
  const char *grid = "blockIdx.x * (long long)blockDim.x + threadIdx.x";
  const char *stride = "(long long)gridDim.x * blockDim.x";
  if (ln.width == 1) {
    Dim total = numElements(s);
    work_ = mergeWork(work_, total);
    Ctx c{nullptr, &body, "      ", 0};
    c_ = &c;
    jdep_.insert("i");
    Index idx = delinearize("i", s);
    std::string r = val(v, idx);
    code += "  { // " + name + ": " + Type{dt, s}.str() + "\n";
    code += "    const long long n = " + D(total) + ";\n";
    code += std::string("    for (long long i = ") + grid + "; i < n; i += " + stride + ") {\n" + body;
    code += "      " + name + "[i] = " + storeExpr(dt, r) + ";\n    }\n  }\n";
    notes_.push_back(name + ": " + widthNote(ln, "", s.empty() ? Dim(1) : s.back(), dt));
    return;
  }
  Shape lead(s.begin(), s.end() - 1);
  int64_t perRow = s.back().constant() / ln.width;
  Dim vectors = numElements(lead) * Dim(perRow);
  work_ = mergeWork(work_, vectors);
  ln.j = "j";
  ln.j0 = "jbase";
  ln.lane = "lane";
  ln.loads = &loads;
  ln.indent = "      ";
  for (const char *x : {"j", "jbase", "lane"})
    jdep_.insert(x);
  preIndent_ = "      ";
  Ctx c{&pre, &body, "        ", 0, &ln};
  c_ = &c;
  Index idx = delinearize("row", lead);
  idx.push_back("j");
  std::string r = val(v, idx);
  std::string w = std::to_string(ln.width), res = fresh("r");
  code += "  { // " + name + ": " + Type{dt, s}.str() + ", " + w + " elements per thread\n";
  code += "    const long long nvec = " + D(vectors) + ";\n";
  code += std::string("    for (long long slot = ") + grid + "; slot < nvec; slot += " + stride + ") {\n";
  code += "      const long long row = slot / " + intLit(perRow) + ", jbase = slot % " + intLit(perRow) +
          " * " + intLit(ln.width) + ";\n";
  code += pre + loads;
  code += "      alignas(16) " + storageType(dt) + " " + res + "[" + w + "];\n";
  code += laneLoopText(ln, "      ", body + "        " + res + "[lane] = " + storeExpr(dt, r) + ";\n");
  code += "      genc_vstore(" + name + " + slot * " + intLit(ln.width) + ", " + res + ");\n    }\n  }\n";
  notes_.push_back(name + ": " + widthNote(ln, std::to_string(ln.width * dtypeSize(dt)) + "-byte " +
                                                 dtypeName(dt) + " stores", s.back(), dt));
}

bool Builder::build(CudaKernel &kern, std::string &why) {
  kern.name = f_.name();
  if (!isIdent(kern.name)) {
    why = "the body's name is not a C identifier";
    return false;
  }
  for (auto &op : f_.ops())
    rows_ |= isReduction(*op);
  std::string params, legend, code;
  std::set<std::string> used;
  std::vector<DType> stored;
  for (size_t i = 0; i < f_.arguments().size(); ++i) {
    Value *a = f_.arguments()[i].get();
    std::string n = isIdent(a->name()) && !used.count(a->name()) ? a->name() : "in" + std::to_string(i);
    used.insert(n);
    DType dt = paramDType(i, false, a->dtype());
    std::string st = storageType(dt);
    if (st.empty()) {
      why = "argument " + n + " has dtype " + dtypeName(dt);
      return false;
    }
    argName_[a] = n;
    argDType_[a] = dt;
    stored.push_back(dt);
    kern.inputs.push_back({n, dt, a->shape()});
    params += ",\n    const " + st + " *__restrict__ " + n;
    for (const Dim &d : a->shape())
      D(d);
  }
  for (size_t i = 0; i < f_.outputs().size(); ++i) {
    const auto &o = f_.outputs()[i];
    std::string n = isIdent(o.name) && !used.count(o.name) ? o.name : "out" + std::to_string(i);
    used.insert(n);
    DType dt = paramDType(i, true, o.value->dtype());
    std::string st = storageType(dt);
    if (st.empty()) {
      why = "result " + n + " has dtype " + dtypeName(dt);
      return false;
    }
    outNames_.push_back(n);
    outDTypes_.push_back(dt);
    stored.push_back(dt);
    kern.outputs.push_back({n, dt, o.value->shape()});
    params += ",\n    " + st + " *__restrict__ " + n;
    if (rows_ && o.value->rank() == 0) {
      why = "a scalar result in a row kernel";
      return false;
    }
  }
  maxWidth_ = maxVectorWidth(stored);
  // One loop per output.
  for (size_t i = 0; i < f_.outputs().size(); ++i) {
    curOut_ = i;
    memo_.clear();
    stages_.clear();
    jdep_.clear();
    shift_.clear();
    shared_ = Dim(0);
    if (rows_) {
      const Shape &s = f_.outputs()[i].value->shape();
      work_ = mergeWork(work_, numElements(Shape(s.begin(), s.end() - 1)));
      rowsLoop(i, code);
    } else {
      elementwiseLoop(i, code);
    }
    if (!err_.empty()) {
      why = err_;
      return false;
    }
  }
  kern.symbols.assign(symbols_.begin(), symbols_.end());
  kern.mode = rows_ ? "rows" : "elementwise";
  kern.work = work_;
  kern.sharedFloats = rows_ ? sharedMax_ : Dim(0);
  kern.blockSize = rows_ ? static_cast<int>(std::min<int64_t>(256, std::max<int64_t>(32, (maxThreads_ + 31) / 32 * 32))) : 256;

  // The legend (llm.c style): shapes first, then what the body does and how
  // the threads access memory.
  legend += "// " + kern.name + ": " + (rows_ ? "one block per row (norm/softmax over the last axis)" : "elementwise, grid-stride") + "\n";
  for (const auto &p : kern.inputs)
    legend += "//   " + p.name + std::string(p.name.size() < 6 ? 6 - p.name.size() : 1, ' ') + Type{p.dtype, p.shape}.str() + "\n";
  for (const auto &p : kern.outputs)
    legend += "//   " + p.name + std::string(p.name.size() < 6 ? 6 - p.name.size() : 1, ' ') + Type{p.dtype, p.shape}.str() + "  (result)\n";
  std::string ops;
  for (auto &op : f_.ops())
    if (!op->is("constant") && !op->is("dims"))
      ops += (ops.empty() ? "" : ", ") + op->kind();
  legend += "//   ops: " + ops + "\n";
  std::string syms;
  for (const auto &s : kern.symbols)
    syms += (syms.empty() ? "" : ", ") + s;
  legend += "//   symbols: " + (syms.empty() ? std::string("none") : syms) + "; launch: " + kern.mode +
            ", work " + kern.work.str() + ", block " + std::to_string(kern.blockSize) +
            (rows_ ? ", shared " + kern.sharedFloats.str() + " floats" : "") + "\n";
  for (const auto &n : notes_)
    legend += "//   " + n + "\n";
  std::string sig;
  for (const auto &s : kern.symbols)
    sig += (sig.empty() ? "" : ",\n    ") + std::string("const long long ") + s;
  if (sig.empty())
    params = params.substr(6); // drop the leading ",\n    "
  std::string head = "extern \"C\" __global__ void " + kern.name + "(\n    " + sig + params + ") {\n";
  if (!rows_) {
    head += "  genc_pdl_wait();\n  genc_pdl_launch();\n";
    kern.code = legend + globals_ + head + code + "}\n";
    // The step kernel's copy: one block strides over every element.
    kern.stepRows = stepCopy(kern, sig, params, blockCoordinates(code));
    return true;
  }
  kern.code = legend + globals_ + rowsBody(kern, sig, params, code, &kern.stepRows) + head +
              "  extern __shared__ float genc_smem[];\n  __shared__ float genc_red[32];\n" +
              "  genc_pdl_wait();\n  genc_pdl_launch();\n  " + kern.name + "_rows(blockIdx.x, gridDim.x, genc_smem, genc_red";
  for (const auto &s : kern.symbols)
    kern.code += ", " + s;
  for (const auto &p : kern.inputs)
    kern.code += ", " + p.name;
  for (const auto &p : kern.outputs)
    kern.code += ", " + p.name;
  kern.code += ");\n}\n";
  return true;
}

namespace {
// Every `from` in `code` becomes `to` (left to right, never inside a `to`).
void replaceAll(std::string &code, const std::string &from, const std::string &to) {
  for (size_t at = code.find(from); at != std::string::npos; at = code.find(from, at + to.size()))
    code.replace(at, from.size(), to);
}
} // namespace

// A row kernel's work as a device function `<name>_rows(row0, rowStep,
// smem, red, symbols..., pointers...)` that the kernel calls with
// (blockIdx.x, gridDim.x), and a GEMV's prologue with (0, 1)
// (codegen/GemvKernels.h); the caller declares the shared memory (a
// function-scope __shared__ variable reached from several kernels made
// NVRTC's output for them vary from run to run, once in CI): it
// runs with the kernel's own thread count (`genc_nt`; threads past it only
// join the block's barriers and reductions with zeros), so its values are
// the kernel's bit for bit in a block of any size at least as large; a null
// result pointer skips that result's loop.
std::string Builder::blockCoordinates(std::string code) const {
  auto replace = [&](const std::string &from, const std::string &to) { replaceAll(code, from, to); };
  replace("blockIdx.x", "genc_row0");
  replace("gridDim.x", "genc_row_step");
  replace("threadIdx.x", "genc_tid");
  replace("blockDim.x", "genc_nt");
  for (const auto &n : outNames_) // each result's loop opens with "  { // <name>: "
    replace("  { // " + n + ": ", "  if (" + n + ") { // " + n + ": ");
  return code;
}

// The step kernel's copy (codegen/StepKernel.cpp) of a body whose block
// coordinates are parameters: in a block of GENC_NT threads (its 128), and
// no __restrict__, so that no load goes through the read-only cache: the
// step kernel writes what later items read within one launch. Its barriers
// and block reductions are the step kernel's compute warps' (genc_step_sync:
// the copy warp never joins them). GENC_STEP_ROWS_INLINE=0 keeps one copy
// however many routines call it (the norm before the QKV product and the
// one before gate/up are one body: the 1.1B's kernel 159 -> 148 KB of
// sm_90 code), for A/B runs against the inlined copies: the kernel's code
// is larger than an SM's instruction cache.
std::string Builder::stepCopy(const CudaKernel &kern, const std::string &sig, const std::string &params,
                              std::string code) const {
  auto replace = [&](const std::string &from, const std::string &to) { replaceAll(code, from, to); };
  replace("__syncthreads()", "genc_step_sync()");
  replace("genc_block_sum(", "genc_step_block_sum(");
  replace("genc_block_max(", "genc_step_block_max(");
  std::string stepParams = (sig.empty() ? ",\n    " + params : ",\n    " + sig + params);
  for (size_t at = stepParams.find("__restrict__ "); at != std::string::npos; at = stepParams.find("__restrict__ ", at))
    stepParams.erase(at, 13);
  const bool inlined = genrt::env::choice("GENC_STEP_ROWS_INLINE", {0, 1}, 1) == 1;
  return std::string("template <long long GENC_NT>\nstatic __device__ ") + (inlined ? "__forceinline__" : "__noinline__") +
         " void " + kern.name +
         "_step_rows(\n    const long long genc_row0, const long long genc_row_step, float *genc_smem, float *genc_red" +
         stepParams + ") {\n  const long long genc_nt = GENC_NT;\n" +
         "  const long long genc_tid = (long long)threadIdx.x < genc_nt ? (long long)threadIdx.x : 0x3fffffffffffffffLL;\n" +
         code + "}\n";
}

std::string Builder::rowsBody(const CudaKernel &kern, const std::string &sig, const std::string &params,
                              std::string code, std::string *stepRows) const {
  code = blockCoordinates(code);
  std::string head = "static __device__ __forceinline__ void " + kern.name +
                     "_rows(\n    const long long genc_row0, const long long genc_row_step, float *genc_smem, float *genc_red" +
                     (sig.empty() ? ",\n    " + params : ",\n    " + sig + params) + ") {\n";
  head += "  const long long genc_nt = " + std::to_string(kern.blockSize) + "LL;\n";
  head += "  const long long genc_tid = (long long)threadIdx.x < genc_nt ? (long long)threadIdx.x : 0x3fffffffffffffffLL;\n";
  *stepRows = stepCopy(kern, sig, params, code);
  return head + code + "}\n";
}

} // namespace genc::cuda_detail

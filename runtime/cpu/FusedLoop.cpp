#include "runtime/cpu/FusedLoop.h"

#include "runtime/plan/Attr.h"

#include "runtime/cpu/Activation.h"
#include "runtime/cpu/FusedBody.h"
#include "runtime/cpu/FusedRows.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>

namespace genrt::cpu {
namespace {

using Loc = FusedLoop::Loc;
using Code = FusedLoop::Code;

bool isRow(const Loc &l) { return (l.kind == Loc::Arg && !l.shared) || l.kind == Loc::Out || l.kind == Loc::Temp; }

// The constant dims of `s` after its token axis (all of them without one).
std::vector<int64_t> rowDims(const Shape &s) {
  std::vector<int64_t> out;
  for (const Dim &d : s) {
    if (!d.isConstant())
      out.clear();
    else
      out.push_back(d.constant());
  }
  return out;
}

// Whether fixed data of shape `fixed` broadcasts onto a row of dims `row`
// element for element (its dims, leading 1s dropped, are the row's last
// dims and cover the row) or as one scalar.
bool fitsRow(const std::vector<int64_t> &fixed, const std::vector<int64_t> &row) {
  int64_t n = 1, r = 1;
  for (int64_t d : fixed)
    n *= d;
  for (int64_t d : row)
    r *= d;
  if (n == 1)
    return true;
  if (n != r)
    return false;
  size_t i = 0;
  while (i < fixed.size() && fixed[i] == 1)
    ++i;
  const size_t len = fixed.size() - i;
  if (len > row.size())
    return false;
  for (size_t k = 0; k < len; ++k)
    if (fixed[i + k] != row[row.size() - len + k])
      return false;
  return true;
}

int64_t axisOf(const OpInfo &op, int64_t rank, int64_t dflt) {
  int64_t a = attrInt(op.attrs, "axis", dflt);
  return a < 0 ? a + rank : a;
}

} // namespace

bool FusedLoop::prepare(const Program &body, const std::vector<Tensor> &weights) {
  body_ = nullptr;
  code_.clear();
  argRow_.clear();
  outRow_.clear();
  tempRow_.clear();
  tempAt_.clear();
  tempElements_ = 0;
  constants_.clear();
  const size_t nv = body.values.size();
  std::vector<Loc> loc(nv);
  std::vector<const Tensor *> fixedT(nv, nullptr);
  std::vector<char> ids(nv, 0), shapeOnly(nv, 0);

  // fixedShape[v]: the dims of data that is the same for every token.
  std::vector<std::vector<int64_t>> fixedShape(nv);
  std::vector<char> isFixed(nv, 0);
  for (size_t i = 0; i < body.arguments.size(); ++i) {
    const int32_t v = body.arguments[i];
    TokenAxis ax;
    if (!tokenAxisOf(body.values[v].shape, ax))
      return false;
    const DType dt = body.values[v].dtype;
    if (!ax.present) { // an operand without tokens (a weight): every token reads all of it
      if (dt != DType::F32)
        return false;
      fixedShape[v] = shapeAtTokens(body.values[v].shape, 0);
      int64_t n = 1;
      for (int64_t d : fixedShape[v])
        n *= d;
      isFixed[v] = 1;
      argRow_.push_back(0);
      loc[v] = Loc{Loc::Arg, static_cast<int>(i), 0, n, nullptr, /*shared=*/true};
      continue;
    }
    if (dt != DType::F32 && !(dt == DType::I64 && ax.rowElements == 1))
      return false;
    ids[v] = dt == DType::I64;
    argRow_.push_back(ax.rowElements);
    loc[v] = Loc{Loc::Arg, static_cast<int>(i), 0, ax.rowElements, nullptr};
  }
  for (size_t v = 0; v < nv; ++v)
    if (body.values[v].storage == Storage::Weight) {
      const int32_t w = body.values[v].index;
      if (w < 0 || static_cast<size_t>(w) >= weights.size() || weights[w].dtype() != DType::F32)
        return false;
      fixedT[v] = &weights[w];
      fixedShape[v] = weights[w].shape();
      isFixed[v] = 1;
      loc[v] = Loc{Loc::Fixed, -1, 0, weights[w].numElements(), weights[w].data<float>()};
    }
  for (int32_t r : body.outputs) {
    TokenAxis ax;
    if (!tokenAxisOf(body.values[r].shape, ax) || !ax.present || body.values[r].dtype != DType::F32)
      return false;
    outRow_.push_back(ax.rowElements);
  }
  // A computed value's row: the first result it is, or a scratch row.
  auto placeResult = [&](int32_t v, int64_t n) {
    for (size_t j = 0; j < body.outputs.size(); ++j)
      if (body.outputs[j] == v && outRow_[j] == n)
        return Loc{Loc::Out, static_cast<int>(j), 0, n, nullptr};
    tempRow_.push_back(n);
    return Loc{Loc::Temp, static_cast<int>(tempRow_.size() - 1), 0, n, nullptr};
  };

  for (const OpInfo &op : body.ops) {
    const std::string &k = op.kind;
    bool allFixed = true;
    for (int32_t o : op.operands)
      allFixed = allFixed && fixedT[o];
    if (allFixed && k != "dims") { // constants, and ops over weights alone: once, here
      Kernel kernel = findKernel(k);
      if (!kernel)
        return false;
      std::vector<Tensor> ins, outs(op.results.size());
      for (int32_t o : op.operands)
        ins.push_back(*fixedT[o]);
      std::map<std::string, int64_t> syms{{"tokens", 1}};
      std::vector<int64_t> ranks;
      for (int32_t r : op.results)
        ranks.push_back(static_cast<int64_t>(body.values[r].shape.size()));
      KernelContext ctx;
      ctx.symbols = &syms;
      ctx.resultRanks = &ranks;
      if (kernel(ctx, op.attrs, ins, outs))
        return false;
      for (size_t r = 0; r < outs.size(); ++r) {
        constants_.push_back(std::move(outs[r]));
        const Tensor &c = constants_.back();
        const int32_t v = op.results[r];
        fixedT[v] = &c;
        fixedShape[v] = c.shape();
        if (c.dtype() == DType::F32) {
          isFixed[v] = 1;
          loc[v] = Loc{Loc::Fixed, -1, 0, c.numElements(), c.data<float>()};
        } else
          shapeOnly[v] = 1; // an integer constant: a reshape's shape at most
      }
      continue;
    }
    auto operand = [&](size_t i) -> const Loc & { return loc[op.operands.at(i)]; };
    if (op.results.empty())
      return false;
    const int32_t res = op.results[0];
    const ValueInfo &rv = body.values[res];
    TokenAxis rax;
    const bool rowResult = tokenAxisOf(rv.shape, rax) && rax.present;
    if (k == "dims") {
      shapeOnly[res] = 1;
      continue;
    }
    if (k == "reshape") {
      if (op.operands.size() != 2 || !isRow(operand(0)) || !(shapeOnly[op.operands[1]] || fixedT[op.operands[1]]) ||
          !rowResult || rax.rowElements != operand(0).elements)
        return false;
      loc[res] = operand(0); // the same row, other dims
      continue;
    }
    if (k == "split") {
      const Loc &x = operand(0);
      const ValueInfo &xv = body.values[op.operands[0]];
      const std::vector<int64_t> dims = rowDims(xv.shape);
      if (!isRow(x) || dims.empty() || axisOf(op, static_cast<int64_t>(xv.shape.size()), 0) !=
                                           static_cast<int64_t>(xv.shape.size()) - 1)
        return false;
      for (size_t d = 0; d + 1 < dims.size(); ++d)
        if (dims[d] != 1)
          return false; // pieces of a last dim that repeats are not contiguous
      std::vector<int64_t> sizes = op.attrs.count("split") ? attrInts(op.attrs, "split") : std::vector<int64_t>();
      if (sizes.empty())
        sizes.assign(op.results.size(), dims.back() / static_cast<int64_t>(op.results.size()));
      if (sizes.size() != op.results.size())
        return false;
      int64_t at = 0;
      for (size_t r = 0; r < sizes.size(); ++r) {
        loc[op.results[r]] = Loc{x.kind, x.index, x.offset + at, sizes[r], nullptr};
        at += sizes[r];
      }
      if (at != x.elements)
        return false;
      continue;
    }
    if (!rowResult || op.results.size() != 1 || rv.dtype != DType::F32)
      return false;
    Instr in;
    in.n = rax.rowElements;
    const std::vector<int64_t> rdims = rowDims(rv.shape);
    if (k == "add" || k == "sub" || k == "mul" || k == "div") {
      if (op.operands.size() != 2)
        return false;
      in.code = k == "add" ? Code::Add : k == "sub" ? Code::Sub : k == "mul" ? Code::Mul : Code::Div;
      for (int i = 0; i < 2; ++i) {
        const Loc &x = operand(static_cast<size_t>(i));
        const bool ok = isRow(x) ? x.elements == in.n && !ids[op.operands[i]]
                                 : isFixed[op.operands[i]] && fitsRow(fixedShape[op.operands[i]], rdims);
        if (!ok)
          return false;
      }
      in.a = operand(0);
      in.b = operand(1);
    } else if (k == "silu" || k == "sigmoid") {
      if (!isRow(operand(0)) || operand(0).elements != in.n)
        return false;
      in.code = k == "silu" ? Code::Silu : Code::Sigmoid;
      in.a = operand(0);
    } else if (k == "rms_norm" || k == "layer_norm") {
      const ValueInfo &xv = body.values[op.operands[0]];
      const int64_t rank = static_cast<int64_t>(xv.shape.size());
      if (op.operands.size() < 2 || !isRow(operand(0)) || operand(0).elements != in.n || rdims.empty() ||
          axisOf(op, rank, -1) != rank - 1)
        return false;
      in.normN = rdims.back();
      auto vectorOf = [&](size_t i) { // fixed data of exactly the normalised dim
        const int32_t v = op.operands[i];
        int64_t n = 1;
        for (int64_t d : fixedShape[v])
          n *= d;
        return isFixed[v] && n == in.normN && fixedShape[v].size() == 1;
      };
      if (!vectorOf(1) || in.n % in.normN)
        return false;
      in.b = operand(1);
      in.code = k == "rms_norm" ? Code::RmsNorm : Code::LayerNorm;
      if (k == "layer_norm" && op.operands.size() > 2) {
        if (!vectorOf(2))
          return false;
        in.c = operand(2);
      }
      if (k == "rms_norm" && op.operands.size() > 2)
        return false;
      in.eps = static_cast<float>(attrFloat(op.attrs, "epsilon", 1e-5));
      in.a = operand(0);
    } else if (k == "gather") {
      if (op.operands.size() != 2 || !isFixed[op.operands[0]])
        return false;
      const std::vector<int64_t> &ts = fixedShape[op.operands[0]];
      const int64_t rank = static_cast<int64_t>(ts.size());
      if (rank < 1 || ts[0] <= 0 || axisOf(op, rank, 0) != 0 || !ids[op.operands[1]] ||
          operand(0).elements / ts[0] != in.n)
        return false;
      in.code = Code::Gather;
      in.b = operand(0);
      in.normN = ts[0];
      in.a = operand(1);
    } else {
      return false;
    }
    in.y = placeResult(res, in.n);
    loc[res] = in.y;
    code_.push_back(in);
  }
  // Results not computed into their rows (aliases, arguments, a value that
  // is two results): copied there.
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const Loc &x = loc[body.outputs[j]];
    if (x.kind == Loc::Out && x.index == static_cast<int>(j) && x.offset == 0)
      continue;
    if (!isRow(x) || x.elements != outRow_[j] || ids[body.outputs[j]])
      return false;
    Instr c;
    c.code = Code::Copy;
    c.a = x;
    c.n = outRow_[j];
    c.y = Loc{Loc::Out, static_cast<int>(j), 0, outRow_[j], nullptr};
    code_.push_back(c);
  }

  for (int64_t n : tempRow_) {
    tempAt_.push_back(tempElements_);
    tempElements_ += n;
  }

  // The probe: 5 random tokens through this loop and op by op; the same
  // bits or no.
  const int64_t T = 5;
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<Tensor> ins, want(body.outputs.size()), got;
  for (size_t i = 0; i < body.arguments.size(); ++i) {
    const ValueInfo &v = body.values[body.arguments[i]];
    Tensor t(v.dtype, shapeAtTokens(v.shape, T));
    // A weight operand (an embedding table): the probe's ids read its first
    // rows only, so only its first elements need to be random.
    const int64_t fill = argRow_[i] ? t.numElements() : std::min<int64_t>(t.numElements(), 1 << 16);
    for (int64_t e = 0; e < fill; ++e) {
      if (v.dtype == DType::F32)
        t.data<float>()[e] = g(rng);
      else
        t.data<int64_t>()[e] = static_cast<int64_t>(rng() % 2);
    }
    ins.push_back(std::move(t));
  }
  std::map<std::string, int64_t> syms{{"tokens", T}};
  KernelContext ctx;
  ctx.symbols = &syms;
  if (runFusedBody(body, weights, ctx, ins, want))
    return false;
  for (size_t j = 0; j < body.outputs.size(); ++j)
    got.emplace_back(DType::F32, shapeAtTokens(body.values[body.outputs[j]].shape, T));
  body_ = &body;
  if (runRows(0, T, ins, got)) {
    body_ = nullptr;
    return false;
  }
  for (size_t j = 0; j < got.size(); ++j)
    if (want[j].dtype() != DType::F32 || want[j].numBytes() != got[j].numBytes() ||
        std::memcmp(want[j].rawData(), got[j].rawData(), got[j].numBytes()) != 0) {
      body_ = nullptr;
      return false;
    }
  return true;
}

Error FusedLoop::runRows(int64_t t0, int64_t t1, const std::vector<Tensor> &ins, std::vector<Tensor> &outs) const {
  std::vector<float> temps(static_cast<size_t>(tempElements_));
  for (int64_t t = t0; t < t1; ++t) {
    auto ptr = [&](const Loc &l) -> float * {
      switch (l.kind) {
      case Loc::Arg: // argRow_ 0: the same data for every token
        return const_cast<float *>(static_cast<const float *>(ins[l.index].rawData())) + t * argRow_[l.index] +
               l.offset;
      case Loc::Out:
        return static_cast<float *>(const_cast<void *>(outs[l.index].rawData())) + t * outRow_[l.index] + l.offset;
      case Loc::Temp:
        return temps.data() + tempAt_[l.index] + l.offset;
      case Loc::Fixed:
        return const_cast<float *>(l.fixed) + l.offset;
      case Loc::None:
        break;
      }
      return nullptr;
    };
    for (const Instr &in : code_) {
      float *y = ptr(in.y);
      const int64_t n = in.n;
      switch (in.code) {
      case Code::Add:
      case Code::Sub:
      case Code::Mul:
      case Code::Div: {
        const float *a = ptr(in.a), *b = ptr(in.b);
        // Fixed data of one element is a scalar (fitsRow allowed it).
        const int64_t sa = !isRow(in.a) && in.a.elements == 1 ? 0 : 1;
        const int64_t sb = !isRow(in.b) && in.b.elements == 1 ? 0 : 1;
        switch (in.code) {
        case Code::Add: for (int64_t i = 0; i < n; ++i) y[i] = a[i * sa] + b[i * sb]; break;
        case Code::Sub: for (int64_t i = 0; i < n; ++i) y[i] = a[i * sa] - b[i * sb]; break;
        case Code::Mul: for (int64_t i = 0; i < n; ++i) y[i] = a[i * sa] * b[i * sb]; break;
        default: for (int64_t i = 0; i < n; ++i) y[i] = a[i * sa] / b[i * sb]; break;
        }
        break;
      }
      case Code::Silu: siluRow(ptr(in.a), y, n); break;
      case Code::Sigmoid: sigmoidRow(ptr(in.a), y, n); break;
      case Code::RmsNorm: rmsNormRows(ptr(in.a), ptr(in.b), y, n / in.normN, in.normN, in.eps); break;
      case Code::LayerNorm:
        layerNormRows(ptr(in.a), ptr(in.b), in.c.kind == Loc::None ? nullptr : ptr(in.c), y, n / in.normN, in.normN,
                      in.eps);
        break;
      case Code::Gather: {
        const int64_t id = static_cast<const int64_t *>(ins[in.a.index].rawData())[t], V = in.normN;
        if (id < -V || id >= V)
          return Error::make("'gather' in fused body '" + body_->name + "': index " + std::to_string(id) +
                             " is out of range for axis 0 of size " + std::to_string(V));
        std::memcpy(y, ptr(in.b) + (id < 0 ? id + V : id) * n, static_cast<size_t>(n) * sizeof(float));
        break;
      }
      case Code::Copy: std::memmove(y, ptr(in.a), static_cast<size_t>(n) * sizeof(float)); break;
      }
    }
  }
  return Error::success();
}

Error FusedLoop::run(const std::map<std::string, int64_t> &symbols, ThreadPool *pool, const std::vector<Tensor> &ins,
                     std::vector<Tensor> &outs) const {
  if (!body_)
    return Error::make("a fused loop that was not prepared");
  auto it = symbols.find("tokens");
  if (it == symbols.end() || ins.size() != argRow_.size() || outs.size() != outRow_.size())
    return Error::make("fused body '" + body_->name + "' called with the wrong arity");
  const int64_t T = it->second;
  for (size_t i = 0; i < ins.size(); ++i)
    if ((argRow_[i] && ins[i].numElements() != T * argRow_[i]) || !ins[i].rawData() ||
        ins[i].dtype() != body_->values[body_->arguments[i]].dtype)
      return Error::make("fused body '" + body_->name + "': an argument does not match its row");
  for (size_t j = 0; j < outs.size(); ++j)
    if (!outs[j].valid() || !outs[j].rawData() || outs[j].numElements() != T * outRow_[j] ||
        outs[j].dtype() != DType::F32)
      return Error::make("fused body '" + body_->name + "': a result has no planned buffer");
  // Pieces of at least 16 tokens: a row is a microsecond or less.
  if (!pool || pool->size() <= 1 || T < 32)
    return runRows(0, T, ins, outs);
  std::mutex mu;
  Error failure;
  pool->parallelFor(T, 16, [&](int64_t t0, int64_t t1) {
    if (Error e = runRows(t0, t1, ins, outs)) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure)
        failure = std::move(e);
    }
  });
  return failure;
}

} // namespace genrt::cpu

// fuse-gemms: GEMM-level fusion before the elementwise groups are formed.
//
// Runs after derive-plan on @prefill, @decode_step and @encode:
//  0. matmul(x, transpose(W)) of a 2-D weight -> matmul(x, W) {transpose_b}.
//  1. Biases: `add(matmul(x, W), b)` with a 1-D weight b of W's width becomes
//     `matmul(x, W, b) {epilogue = "bias"}` (cuBLASLt's BIAS epilogue).
//  2. Horizontal fusion: matmuls that read the same input with 2-D weights
//     [d, n_i] (Q/K/V, gate/up) become one matmul with the weights (and
//     biases, zeros where a sibling has none) concatenated along n, followed
//     by a `split`.
//     matmul_nbits GEMMs (4/8-bit weights) that read one input merge the same
//     way when their bits, block size, scale dtype and zero-point form agree:
//     codes, scales and zero points concatenated along n (rows of the
//     stored [n, ...] tensors); the others stay apart with a Missed remark.
//  3. Activations: a relu or tanh-GELU right after a GEMM that stayed alone
//     joins its epilogue ("relu", "gelu_tanh", "bias_relu",
//     "bias_gelu_tanh": cuBLASLt's RELU(_BIAS) / GELU(_BIAS)), also when a
//     reshape sits between them. Erf-GELU stays a separate op: cuBLASLt's
//     GELU is the tanh approximation.
// Each fold and merge is a Passed remark; a bias, activation or sibling GEMM
// left out is a Missed one that says why.
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "runtime/plan/Epilogue.h"
#include "passes/analysis/Fusability.h"
#include "passes/analysis/PlanPrograms.h"

#include <map>
#include <numeric>

namespace genc {
namespace {

bool isLinear(const Op &op) {
  if (!op.is("matmul") || op.numOperands() < 2)
    return false;
  if (op.intAttr("transpose_b", 0))
    return op.operand(1)->isWeight() && op.operand(1)->rank() == 2;
  const Value *w = op.operand(1);
  return w->isWeight() && w->rank() == 2 && w->shape()[0].isConstant() &&
         w->shape()[1].isConstant();
}

// ---- 0. transposed weights ---------------------------------------------------

// matmul(x, transpose(W)) with a 2-D weight W reads W as stored
// ({transpose_b = 1}): no transpose launch per step, and no transposed copy
// of a tied embedding matrix.
void foldWeightTransposes(Function &f, const Remarks &R) {
  for (auto &op : f.ops()) {
    if (!op->is("matmul") || op->numOperands() != 2 || op->hasAttr("transpose_b"))
      continue;
    Op *t = op->operand(1)->definingOp();
    if (t && t->is("transpose") && t->operand(0)->isWeight() && t->operand(0)->rank() == 2 &&
        t->intsAttr("perm") == std::vector<int64_t>{1, 0}) {
      op->setOperand(1, t->operand(0));
      op->setAttr("transpose_b", int64_t(1));
      R.passed("TransposeFolded", f, op.get())
          << "the GEMM reads " << arg("Weight", "@" + t->operand(0)->name())
          << " as stored (transpose_b): no transpose launch";
    }
  }
  f.eraseDeadOps();
}

// ---- 1. epilogues -------------------------------------------------------------

// The weight `add` adds to x, if it adds one.
Value *addedWeight(const Op &add, const Value *x) {
  if (!add.is("add") || add.numOperands() != 2)
    return nullptr;
  Value *o = add.operand(0) == x ? add.operand(1) : add.operand(0);
  return o != x && o->isWeight() ? o : nullptr;
}

// Why `add(mm, bias)` cannot become the BIAS epilogue; empty if it can.
std::string biasRefusal(const Function &f, const Op &mm, const Op &add, const Value &bias) {
  const Value *r = mm.result();
  if (f.soleUser(r) != &add)
    return "the result of the GEMM is also read without the bias";
  if (add.result()->type() != r->type())
    return "the sum is " + add.result()->type().str() + ", the result of the GEMM " +
           r->type().str();
  if (bias.rank() != 1 || bias.shape()[0] != r->shape().back())
    return "it is " + bias.type().str() + ", not a vector of the " + r->shape().back().str() +
           " columns of the GEMM";
  if (bias.dtype() != mm.operand(1)->dtype())
    return "it is " + std::string(dtypeName(bias.dtype())) + ", the weight " +
           dtypeName(mm.operand(1)->dtype());
  return "";
}

void foldBiases(Function &f, const Remarks &R) {
  for (auto &op : f.ops()) {
    Op *mm = op.get();
    if (!isLinear(*mm) || mm->hasAttr("epilogue"))
      continue;
    Op *add = nullptr;
    Value *bias = nullptr;
    for (Op *u : f.users(mm->result()))
      if ((bias = addedWeight(*u, mm->result()))) {
        add = u;
        break;
      }
    if (!add)
      continue;
    if (std::string why = biasRefusal(f, *mm, *add, *bias); !why.empty()) {
      R.missed("BiasNotFolded", f, add) << "bias " << arg("Bias", "@" + bias->name())
                                        << " stays an add: " << arg("Reason", why);
      continue;
    }
    mm->setOperands({mm->operand(0), mm->operand(1), bias});
    f.replaceAllUses(add->result(), mm->result());
    f.erase(add);
    mm->setAttr("epilogue", std::string("bias"));
    R.passed("BiasFolded", f, mm) << "bias " << arg("Bias", "@" + bias->name())
                                  << " folded into the GEMM epilogue";
  }
}

// After horizontal fusion: a merged GEMM is followed by its split, so only
// GEMMs left alone take their activation (gate/up pairs merge first: one GEMM
// launch saved beats an activation folded).
// Why an activation right after a GEMM has no epilogue; empty for ops
// that are no activation (residual adds, gates).
std::string activationRefusal(const Op &act) {
  if (act.is("gelu"))
    return "erf-GELU: the GELU epilogue of cuBLASLt is the tanh approximation";
  if (act.is("silu") || act.is("sigmoid") || act.is("tanh"))
    return "cuBLASLt has no " + act.kind() + " epilogue";
  return "";
}

void foldActivations(Function &f, const Remarks &R) {
  for (auto &op : f.ops()) {
    Op *mm = op.get();
    if (!isLinear(*mm))
      continue;
    genrt::Epilogue ep;
    if (!genrt::parseEpilogue(mm->strAttr("epilogue"), ep) || !ep.activation.empty())
      continue;
    // The activation may sit behind a reshape (GPT-2's Conv1D works on 2-D
    // rows): elementwise commutes with it, so it moves into the epilogue and
    // the reshape stays.
    Value *out = mm->result();
    Op *act = f.soleUser(out);
    if (act && isView(*act) && f.soleUser(act->result())) {
      out = act->result();
      act = f.soleUser(out);
    }
    if (!act || act->result()->type() != out->type())
      continue;
    ep.activation = act->is("relu")                                             ? "relu"
                    : act->is("gelu") && act->strAttr("approximate") == "tanh" ? "gelu_tanh"
                                                                               : "";
    if (ep.activation.empty()) {
      if (std::string why = activationRefusal(*act); !why.empty())
        R.missed("ActivationNotFolded", f, act)
            << arg("Activation", act->kind()) << " after the GEMM stays a kernel: "
            << arg("Reason", why);
      continue;
    }
    std::string kind = act->kind();
    f.replaceAllUses(act->result(), out);
    f.erase(act);
    mm->setAttr("epilogue", genrt::epilogueName(ep));
    R.passed("ActivationFolded", f, mm) << arg("Activation", kind) << " joins the GEMM epilogue ("
                                        << arg("Epilogue", genrt::epilogueName(ep)) << ")";
  }
}

// ---- 2. horizontal fusion -------------------------------------------------------

std::shared_ptr<const Tensor> concatColumns(const std::vector<Value *> &ws) {
  for (Value *w : ws)
    if (!w->data())
      return nullptr; // IR text: weights carry no data
  int64_t d = ws[0]->data()->shape()[0], total = 0;
  for (Value *w : ws)
    total += w->data()->shape()[1];
  DType dt = ws[0]->dtype();
  size_t es = dtypeSize(dt);
  auto out = std::make_shared<Tensor>(dt, std::vector<int64_t>{d, total});
  auto *dst = out->data<uint8_t>();
  int64_t col = 0;
  for (Value *w : ws) {
    int64_t n = w->data()->shape()[1];
    auto *src = static_cast<const uint8_t *>(w->data()->rawData());
    for (int64_t r = 0; r < d; ++r)
      std::copy(src + r * n * es, src + (r + 1) * n * es, dst + (r * total + col) * es);
    col += n;
  }
  return out;
}

// The siblings' biases end to end; zeros for a sibling without one.
std::shared_ptr<const Tensor> concatBiases(const std::vector<Op *> &mms, DType dt, int64_t total) {
  auto out = std::make_shared<Tensor>(dt, std::vector<int64_t>{total});
  size_t es = dtypeSize(dt);
  auto *dst = out->data<uint8_t>();
  std::fill(dst, dst + total * es, uint8_t(0));
  int64_t col = 0;
  for (Op *mm : mms) {
    int64_t n = mm->operand(1)->shape()[1].constant();
    if (mm->numOperands() > 2) {
      const Tensor *b = mm->operand(2)->data();
      if (!b)
        return nullptr;
      auto *src = static_cast<const uint8_t *>(b->rawData());
      std::copy(src, src + n * es, dst + col * es);
    }
    col += n;
  }
  return out;
}

Value *sharedWeight(Module &m, const std::string &name, Type t, std::shared_ptr<const Tensor> data) {
  if (Value *w = m.weight(name)) // @prefill and @decode_step share it
    return w;
  return m.addWeight(name, std::move(t), std::move(data));
}

// Why a GEMM reading the same input as `first` stays out of their merge;
// empty if it joins.
std::string siblingRefusal(const Op &mm, const Op &first) {
  if (mm.intAttr("transpose_b", 0))
    return "its weight is read transposed ([n, d]); the merge concatenates [d, n] weights";
  if (mm.operand(1)->dtype() != first.operand(1)->dtype())
    return "its weight is " + std::string(dtypeName(mm.operand(1)->dtype())) + ", the others " +
           dtypeName(first.operand(1)->dtype());
  return "";
}

void fuseSiblings(Module &m, Function &f, const Remarks &R) {
  std::map<Value *, std::vector<Op *>> byInput;
  for (auto &op : f.ops())
    if (isLinear(*op))
      byInput[op->operand(0)].push_back(op.get());
  for (auto &[x, mms] : byInput) {
    if (mms.size() < 2)
      continue;
    const Op *lead = nullptr; // the first GEMM that can merge sets the dtype
    for (Op *mm : mms)
      if (!mm->intAttr("transpose_b", 0) && !lead)
        lead = mm;
    std::vector<Op *> set;
    for (Op *mm : mms) {
      std::string why = siblingRefusal(*mm, lead ? *lead : *mm);
      if (why.empty())
        set.push_back(mm);
      else
        R.missed("GemmNotMerged", f, mm)
            << "the GEMM of " << arg("Weight", "@" + mm->operand(1)->name())
            << " reads the same input as others but is not merged: " << arg("Reason", why);
    }
    if (set.size() < 2)
      continue;
    std::vector<Value *> ws;
    std::vector<int64_t> sizes;
    std::string name;
    bool anyBias = false;
    for (Op *mm : set) {
      ws.push_back(mm->operand(1));
      sizes.push_back(mm->operand(1)->shape()[1].constant());
      name += (name.empty() ? "" : "+") + mm->operand(1)->name();
      anyBias |= mm->numOperands() > 2;
    }
    int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    DType dt = ws[0]->dtype();
    std::vector<Value *> operands{x, sharedWeight(m, name, Type{dt, {ws[0]->shape()[0], Dim(total)}},
                                                  concatColumns(ws))};
    if (anyBias)
      operands.push_back(sharedWeight(m, name + ".bias", Type{dt, {Dim(total)}},
                                      concatBiases(set, dt, total)));
    Type outT = set[0]->result()->type();
    outT.shape.back() = Dim(total);
    Op *first = set[0];
    auto mm = std::make_unique<Op>("matmul", operands, std::vector<Type>{outT}, first->loc());
    if (anyBias)
      mm->setAttr("epilogue", std::string("bias"));
    std::vector<Type> parts;
    for (Op *o : set)
      parts.push_back(o->result()->type());
    Value *fused = f.insertBefore(f.find(first), std::move(mm))->result();
    auto split = std::make_unique<Op>("split", std::vector<Value *>{fused}, parts, first->loc());
    split->setAttr("axis", int64_t(-1));
    split->setAttr("split", sizes);
    Op *sp = f.insertBefore(f.find(first), std::move(split));
    R.passed("GemmsMerged", f, fused->definingOp())
        << arg("GEMMs", int64_t(set.size())) << " GEMMs reading one input merged into one: weight "
        << arg("Weight", "@" + name) << ", result " << arg("Type", outT);
    for (size_t i = 0; i < set.size(); ++i) {
      f.replaceAllUses(set[i]->result(), sp->result(i));
      f.erase(set[i]);
    }
  }
}

// ---- 2b. horizontal fusion of 4/8-bit GEMMs --------------------------------------

// The weights of `ws` (each [n_i, ...], rows of equal size) stacked along n;
// null for IR text (weights without data).
std::shared_ptr<const Tensor> concatRows(const std::vector<Value *> &ws, const Type &t) {
  for (Value *w : ws)
    if (!w->data())
      return nullptr;
  auto out = std::make_shared<Tensor>(t.dtype, *constantShape(t.shape));
  auto *dst = out->data<uint8_t>();
  for (Value *w : ws) {
    const auto *src = static_cast<const uint8_t *>(w->data()->rawData());
    dst = std::copy(src, src + w->data()->numBytes(), dst);
  }
  return out;
}

// Why a matmul_nbits reading the same input as `lead` stays out of their
// merge; empty if it joins.
std::string nbitsSiblingRefusal(const Op &mm, const Op &lead) {
  if (mm.intAttr("bits", 0) != lead.intAttr("bits", 0) || mm.intAttr("block_size", 0) != lead.intAttr("block_size", 0))
    return "its weight is " + std::to_string(mm.intAttr("bits", 0)) + "-bit in blocks of " +
           std::to_string(mm.intAttr("block_size", 0)) + ", the others " + std::to_string(lead.intAttr("bits", 0)) +
           "-bit in blocks of " + std::to_string(lead.intAttr("block_size", 0));
  if (mm.operand(2)->dtype() != lead.operand(2)->dtype())
    return "its scales are " + std::string(dtypeName(mm.operand(2)->dtype())) + ", the others " +
           dtypeName(lead.operand(2)->dtype());
  if (mm.intAttr("accuracy_level", 0) != lead.intAttr("accuracy_level", 0))
    return "its accuracy_level is " + std::to_string(mm.intAttr("accuracy_level", 0)) + ", the others' " +
           std::to_string(lead.intAttr("accuracy_level", 0));
  auto zp = [](const Op &o) { return o.numOperands() < 4 ? std::string("none") : dtypeName(o.operand(3)->dtype()); };
  if (zp(mm) != zp(lead))
    return "its zero points are " + zp(mm) + ", the others' " + zp(lead);
  for (size_t i = 1; i < mm.numOperands(); ++i)
    if (!mm.operand(i)->isWeight())
      return "operand " + std::to_string(i) + " is not a weight";
  return "";
}

void fuseNBitsSiblings(Module &m, Function &f, const Remarks &R) {
  std::map<Value *, std::vector<Op *>> byInput;
  std::vector<Value *> inputs; // in program order, so remarks come in that order
  std::map<Value *, bool> plainToo; // the input also feeds a matmul of float weights
  for (auto &op : f.ops()) {
    if (op->is("matmul_nbits")) {
      if (byInput[op->operand(0)].empty())
        inputs.push_back(op->operand(0));
      byInput[op->operand(0)].push_back(op.get());
    } else if (isLinear(*op)) {
      plainToo[op->operand(0)] = true;
    }
  }
  for (Value *x : inputs) {
    const std::vector<Op *> &mms = byInput[x];
    if (plainToo[x])
      for (Op *mm : mms)
        R.missed("GemmNotMerged", f, mm) << "the 4/8-bit GEMM of " << arg("Weight", "@" + mm->operand(1)->name())
                                         << " reads the same input as GEMMs of float weights: "
                                         << arg("Reason", "weights of different kinds stay apart");
    if (mms.size() < 2)
      continue;
    std::vector<Op *> set;
    for (Op *mm : mms) {
      std::string why = nbitsSiblingRefusal(*mm, *mms[0]);
      if (why.empty())
        set.push_back(mm);
      else
        R.missed("GemmNotMerged", f, mm) << "the 4/8-bit GEMM of " << arg("Weight", "@" + mm->operand(1)->name())
                                         << " reads the same input as others but is not merged: "
                                         << arg("Reason", why);
    }
    if (set.size() < 2)
      continue;
    std::vector<int64_t> sizes;
    int64_t total = 0;
    std::vector<Value *> operands{x};
    for (size_t i = 1; i < set[0]->numOperands(); ++i) {
      std::vector<Value *> ws;
      std::string name;
      int64_t rows = 0;
      for (Op *mm : set) {
        ws.push_back(mm->operand(i));
        name += (name.empty() ? "" : "+") + mm->operand(i)->name();
        rows += mm->operand(i)->shape()[0].constant(); // the shape rule made them constant
      }
      Type t = ws[0]->type();
      t.shape[0] = Dim(rows);
      operands.push_back(sharedWeight(m, name, t, concatRows(ws, t)));
    }
    for (Op *mm : set) {
      sizes.push_back(mm->intAttr("n", 0));
      total += sizes.back();
    }
    Type outT = set[0]->result()->type();
    outT.shape.back() = Dim(total);
    Op *first = set[0];
    auto mm = std::make_unique<Op>("matmul_nbits", operands, std::vector<Type>{outT}, first->loc());
    mm->setAttr("bits", first->intAttr("bits", 0));
    mm->setAttr("block_size", first->intAttr("block_size", 0));
    mm->setAttr("n", total);
    if (first->intAttr("accuracy_level", 0))
      mm->setAttr("accuracy_level", first->intAttr("accuracy_level", 0));
    std::vector<Type> parts;
    for (Op *o : set)
      parts.push_back(o->result()->type());
    Value *fused = f.insertBefore(f.find(first), std::move(mm))->result();
    auto split = std::make_unique<Op>("split", std::vector<Value *>{fused}, parts, first->loc());
    split->setAttr("axis", int64_t(-1));
    split->setAttr("split", sizes);
    Op *sp = f.insertBefore(f.find(first), std::move(split));
    R.passed("GemmsMerged", f, fused->definingOp())
        << arg("GEMMs", int64_t(set.size())) << " 4/8-bit GEMMs reading one input merged into one: weight "
        << arg("Weight", "@" + operands[1]->name()) << ", result " << arg("Type", outT);
    for (size_t i = 0; i < set.size(); ++i) {
      f.replaceAllUses(set[i]->result(), sp->result(i));
      f.erase(set[i]);
    }
  }
}

} // namespace

llvm::Error fuseGemmsPass(Module &m) {
  Remarks R(m, "fuse-gemms");
  for (Function *f : planPrograms(m)) {
    foldWeightTransposes(*f, R);
    foldBiases(*f, R);
    fuseSiblings(m, *f, R);
    fuseNBitsSiblings(m, *f, R);
    foldActivations(*f, R);
  }
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc

// quantize-weights: `genc compile --weights int8|int4` — the float weights of
// the linear layers become 8-bit or 4-bit block-quantized matrices read by
// `matmul_nbits` (runtime/plan/NBitsLayout.h, passes/analysis/NBitsQuantizer.h).
//
// Runs after derive-plan on @prefill, @decode_step and @encode, before
// fuse-gemms (which then merges the 4/8-bit siblings: Q/K/V, gate/up):
//   matmul(x, W)             W a float weight [K, N]
//   matmul(x, transpose(W))  W [N, K] (a tied embedding as the LM head)
//   matmul(x, W) {transpose_b}
// become matmul_nbits(x, codes, scales[, zero_points]); the programs share
// one quantized copy of each weight. The vocabulary projection (the matmul
// the logits come from) stays as it is unless --quantize-lm-head. Without
// --weights (plan.weight_bits unset) the pass changes nothing.
//
// Remarks: each weight quantized (Passed: shape, bits, group, bytes before and
// after), the vocabulary projection kept (Analysis), a weight that cannot be
// (Missed, with why), and the totals (Analysis).
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/NBitsQuantizer.h"
#include "passes/analysis/PlanOptions.h"
#include "passes/analysis/PlanPrograms.h"

#include <map>

namespace genc {
namespace {

// The matmul the logits come from (as derive-plan finds it), or null.
const Op *vocabularyProjection(const Function &f) {
  if (f.outputs().empty())
    return nullptr;
  const Op *head = f.outputs()[0].value->definingOp();
  while (head && !head->is("matmul") && head->numOperands() >= 1 &&
         (head->is("add") || head->is("reshape") || head->is("cast") || head->is("mul")))
    head = head->operand(0)->definingOp();
  return head && head->is("matmul") ? head : nullptr;
}

// The float weight a matmul multiplies by, and whether it is stored [N, K].
Value *linearWeight(const Op &mm, bool &transposed) {
  if (!mm.is("matmul") || mm.numOperands() != 2 || mm.hasAttr("epilogue") || !isFloat(mm.operand(0)->dtype()))
    return nullptr;
  Value *b = mm.operand(1);
  transposed = mm.intAttr("transpose_b", 0) != 0;
  if (!transposed)
    if (const Op *t = b->definingOp(); t && t->is("transpose") && t->intsAttr("perm") == std::vector<int64_t>{1, 0}) {
      b = t->operand(0);
      transposed = true;
    }
  if (!b->isWeight() || b->rank() != 2 || !isFloat(b->dtype()) || !b->shape()[0].isConstant() ||
      !b->shape()[1].isConstant())
    return nullptr;
  return b;
}

std::string bytesStr(int64_t b) {
  char buf[32];
  if (b >= (int64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

struct Quantized {
  Value *codes = nullptr, *scales = nullptr, *zeroPoints = nullptr;
  genrt::NBitsShape shape;
};

class Quantizer {
public:
  Quantizer(Module &m, const PlanOptions &o) : m_(m), o_(o), R_(m, "quantize-weights") {}

  llvm::Error run() {
    for (Function *f : planPrograms(m_)) {
      const Op *head = vocabularyProjection(*f);
      std::vector<Op *> todo;
      for (auto &op : f->ops())
        todo.push_back(op.get());
      for (Op *mm : todo) {
        bool transposed = false;
        Value *w = linearWeight(*mm, transposed);
        if (!w)
          continue;
        if (mm == head && !o_.quantizeLmHead) {
          R_.analysis("LmHeadKept", *f, mm) << "the vocabulary projection's weight " << arg("Weight", "@" + w->name())
                                            << (std::string(" stays ") + dtypeName(w->dtype()) +
                                                " (--quantize-lm-head quantizes it too)");
          continue;
        }
        auto q = quantized(*f, mm, w, transposed);
        if (!q)
          return q.takeError();
        if (!*q)
          continue;
        rewrite(*f, mm, **q);
      }
      f->eraseDeadOps();
    }
    if (count_)
      for (Function *f : planPrograms(m_))
        if (f->name() == "decode_step")
          R_.analysis("WeightsQuantized", *f)
              << arg("Weights", count_) << " weights in " << arg("Bits", o_.weightBits) << "-bit blocks of "
              << arg("GroupSize", o_.groupSize) << ": " << arg("Bytes", after_)
              << (" bytes (" + bytesStr(after_) + ") where they were ") << arg("FloatBytes", before_)
              << (" (" + bytesStr(before_) + ")");
    m_.eraseUnusedWeights();
    return llvm::Error::success();
  }

private:
  // The quantized copy of w (made once for all programs); null when w stays
  // as it is (with a Missed remark).
  llvm::Expected<const Quantized *> quantized(Function &f, Op *mm, Value *w, bool transposed) {
    auto it = done_.find(w);
    if (it != done_.end())
      return &it->second;
    const int64_t d0 = w->shape()[0].constant(), d1 = w->shape()[1].constant();
    Quantized q;
    q.shape = {o_.weightBits, o_.groupSize, transposed ? d1 : d0, transposed ? d0 : d1};
    if (std::string bad = genrt::checkNBitsShape(q.shape); !bad.empty()) {
      R_.missed("WeightNotQuantized", f, mm) << "weight " << arg("Weight", "@" + w->name()) << " stays "
                                             << dtypeName(w->dtype()) << ": " << arg("Reason", bad);
      return nullptr;
    }
    const std::string base = w->name() + (o_.weightBits == 4 ? ".q4" : ".q8");
    const int64_t blocks = q.shape.blocks();
    NBitsWeights data;
    if (w->data()) {
      if (std::string bad = quantizeNBits(*w->data(), transposed, q.shape, o_.weightsZeroPoint, data); !bad.empty())
        return llvm::createStringError(llvm::inconvertibleErrorCode(), "--weights: weight @%s: %s", w->name().c_str(),
                                       bad.c_str());
    }
    auto add = [&](const std::string &name, DType dt, Shape shape, std::shared_ptr<Tensor> t) {
      if (t) {
        Type ty{t->dtype(), Shape(t->shape().begin(), t->shape().end())};
        return m_.addWeight(name, ty, std::move(t));
      }
      return m_.addWeight(name, Type{dt, std::move(shape)}, nullptr); // IR text: shapes only
    };
    q.codes = add(base, DType::U8, {Dim(q.shape.N), Dim(blocks), Dim(q.shape.blobBytes())}, data.codes);
    q.scales = add(base + ".scales", DType::F16, {Dim(q.shape.N), Dim(blocks)}, data.scales);
    if (o_.weightsZeroPoint)
      q.zeroPoints = add(base + ".zero_points", DType::U8, {Dim(q.shape.N), Dim(q.shape.zeroPointBytes())},
                         data.zeroPoints);
    int64_t bytes = 0;
    for (Value *v : {q.codes, q.scales, q.zeroPoints})
      if (v)
        bytes += bytesOf(*v);
    const int64_t was = bytesOf(*w);
    before_ += was;
    after_ += bytes;
    ++count_;
    R_.passed("WeightQuantized", f, mm) << "weight " << arg("Weight", "@" + w->name()) << " " << arg("Type", w->type())
                                        << " -> " << arg("Bits", q.shape.bits) << "-bit codes in blocks of "
                                        << arg("GroupSize", q.shape.blockSize)
                                        << (std::string(" along K, ") + dtypeName(q.scales->dtype()) + " scales" +
                                            (q.zeroPoints ? ", zero points: " : ": "))
                                        << arg("Bytes", bytes)
                                        << " bytes where it was " << arg("FloatBytes", was);
    return &(done_[w] = q);
  }

  static int64_t bytesOf(const Value &v) {
    int64_t n = static_cast<int64_t>(dtypeSize(v.dtype()));
    for (const Dim &d : v.shape())
      n *= d.isConstant() ? d.constant() : 0;
    return n;
  }

  void rewrite(Function &f, Op *mm, const Quantized &q) {
    std::vector<Value *> operands{mm->operand(0), q.codes, q.scales};
    if (q.zeroPoints)
      operands.push_back(q.zeroPoints);
    auto op = std::make_unique<Op>("matmul_nbits", operands, std::vector<Type>{mm->result()->type()}, mm->loc());
    op->setAttr("bits", q.shape.bits);
    op->setAttr("block_size", q.shape.blockSize);
    op->setAttr("n", q.shape.N);
    Value *y = f.insertBefore(f.find(mm), std::move(op))->result();
    f.replaceAllUses(mm->result(), y);
    f.erase(mm);
  }

  Module &m_;
  const PlanOptions &o_;
  Remarks R_;
  std::map<Value *, Quantized> done_;
  int64_t count_ = 0, before_ = 0, after_ = 0;
};

} // namespace

llvm::Error quantizeWeightsPass(Module &m) {
  const PlanOptions o = planOptions(m);
  if (o.weightBits != 0)
    if (llvm::Error e = Quantizer(m, o).run())
      return e;
  // --nbits-accuracy-level: every 4/8-bit product's, made here or imported
  // (4 changes the CPU kernel's numbers; the attribute is left off below it).
  if (o.nbitsAccuracyLevel >= 0)
    for (auto &f : m.functions())
      for (auto &op : f->ops())
        if (op->is("matmul_nbits")) {
          if (o.nbitsAccuracyLevel == 4)
            op->setAttr("accuracy_level", int64_t(4));
          else
            op->removeAttr("accuracy_level");
        }
  return llvm::Error::success();
}

} // namespace genc

// Shape inference: slice extents against a brute-force ONNX Slice, the
// importer's incremental use (inferOp per op as ops are appended), symbol
// unification order, and sign reasoning on dims.
#include "compiler/ir/ShapeInference.h"
#include "compiler/ir/ShapeRules.h"

#include <gtest/gtest.h>

#include <limits>

using namespace genc;

namespace {

bool failed(llvm::Error e) {
  if (!e)
    return false;
  llvm::consumeError(std::move(e));
  return true;
}

// ONNX Slice by the spec's words, in 128-bit arithmetic.
int64_t bruteSliceCount(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (d == 0)
    return 0; // nothing to pick (the clamp ranges below would be empty)
  __int128 s = start, e = end, n = d;
  if (s < 0)
    s += n;
  if (e < 0)
    e += n;
  int64_t count = 0;
  if (step > 0) {
    s = s < 0 ? 0 : s > n ? n : s;
    e = e < 0 ? 0 : e > n ? n : e;
    for (__int128 i = s; i < e; i += step)
      ++count;
  } else {
    s = s < 0 ? 0 : s > n - 1 ? n - 1 : s;
    e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
    for (__int128 i = s; i > e; i += step)
      ++count;
  }
  return count;
}

TEST(ShapeInference, SliceExtentMatchesOnnxOnConstants) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> bounds = {kMin, -kMax, -9, -4, -3, -1, 0, 1, 2, 3, 5, 9, 2147483647, kMax};
  std::vector<int64_t> steps = {kMin, -5, -2, -1, 1, 2, 3, 7, kMax};
  for (int64_t d = 0; d <= 6; ++d)
    for (int64_t s : bounds)
      for (int64_t e : bounds)
        for (int64_t st : steps) {
          auto got = sliceExtent(Dim(d), Dim(s), Dim(e), st);
          ASSERT_TRUE(got && got->isConstant());
          int64_t want = bruteSliceCount(d, s, e, st);
          ASSERT_EQ(got->constant(), want) << "d=" << d << " start=" << s << " end=" << e
                                           << " step=" << st;
          ASSERT_EQ(static_cast<int64_t>(sliceIndices(d, s, e, st).size()), want);
        }
}

TEST(ShapeInference, SliceExtentOnSymbols) {
  Dim seq = Dim::symbol("seq");
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(*sliceExtent(seq, 0, kMax, 1), seq);
  EXPECT_EQ(*sliceExtent(seq, 1, kMax, 1), seq - 1);
  EXPECT_EQ(*sliceExtent(seq, -1, kMax, 1), Dim(1));
  EXPECT_EQ(*sliceExtent(seq, 0, -1, 1), seq - 1);
  EXPECT_EQ(*sliceExtent(seq, -1, std::numeric_limits<int64_t>::min(), -1), seq);
  EXPECT_EQ(*sliceExtent(Dim(1024), 0, seq, 1), seq); // bias[:seq]
  EXPECT_EQ(*sliceExtent(seq * 2, 0, kMax, 2), seq);
  EXPECT_FALSE(sliceExtent(seq, 0, kMax, 2).has_value()); // ceil(seq/2): not a dim
}

TEST(ShapeInference, DimSign) {
  Dim s = Dim::symbol("s"), t = Dim::symbol("t");
  EXPECT_TRUE(dimSign(s + 1).gtZero);
  EXPECT_TRUE(dimSign(s * t).geZero);
  EXPECT_FALSE(dimSign(s * t).gtZero);
  EXPECT_TRUE(dimSign(Dim(-1) - s).ltZero);
  DimSign mixed = dimSign(s - t);
  EXPECT_FALSE(mixed.geZero || mixed.leZero);
}

// The importer appends each op and calls inferOp at once; unification found
// on the way shows through canonical() until run() rewrites the function.
TEST(ShapeInference, IncrementalInferAndUnify) {
  Module m;
  Function *f = m.addFunction("main");
  Value *ids = f->addArgument("input_ids", Type{DType::I64, {Dim::symbol("s72"), Dim::symbol("s32")}});
  Value *mask = f->addArgument("attention_mask", Type{DType::I64, {Dim::symbol("s43"), Dim::symbol("s53")}});
  ShapeInference si(m);
  auto append = [&](const char *kind, std::vector<Value *> operands, size_t results = 1) {
    Op *op = f->append(std::make_unique<Op>(kind, operands, std::vector<Type>(results)));
    EXPECT_FALSE(failed(si.inferOp(*op)));
    return op;
  };
  Op *sum = append("add", {ids, mask});
  EXPECT_EQ(sum->result()->type().str(), "i64[s72, s32]");
  EXPECT_EQ(si.canonical(Dim::symbol("s43")), Dim::symbol("s72"));
  EXPECT_EQ(si.canonical(Dim::symbol("s53")), Dim::symbol("s32"));

  Op *shape = append("shape", {mask});
  auto v = si.symbolicValue(shape->result());
  ASSERT_TRUE(v);
  EXPECT_EQ(shapeStr(*v), "[s72, s32]");

  // A literal 1 broadcasts without unifying anything.
  Value *one = f->addArgument("one", Type{DType::I64, {Dim(1), Dim::symbol("n")}});
  Op *b = append("add", {ids, one});
  EXPECT_EQ(b->result()->type().str(), "i64[s72, s32]");
  EXPECT_EQ(si.canonical(Dim::symbol("n")), Dim::symbol("s32")); // n meets s32, not 1

  ASSERT_FALSE(failed(si.run(*f)));
  EXPECT_EQ(mask->type().str(), "i64[s72, s32]");
}

TEST(ShapeInference, ErrorsDoNotCrash) {
  Module m;
  Function *f = m.addFunction("main");
  Value *x = f->addArgument("x", Type{DType::F32, {Dim(2), Dim(3)}});
  ShapeInference si(m);
  // Wrong arity, unknown kinds and missing attributes are errors, not asserts.
  Op *bad = f->append(std::make_unique<Op>("add", std::vector<Value *>{x}, std::vector<Type>(1)));
  EXPECT_TRUE(failed(si.inferOp(*bad)));
  Op *unknown = f->append(std::make_unique<Op>("frobnicate", std::vector<Value *>{x}, std::vector<Type>(1)));
  llvm::Error e = si.inferOp(*unknown);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(llvm::toString(std::move(e)), "unknown op kind 'frobnicate'");
  Op *noValue = f->append(std::make_unique<Op>("constant", std::vector<Value *>{}, std::vector<Type>(1)));
  llvm::Error e2 = si.inferOp(*noValue);
  ASSERT_TRUE(static_cast<bool>(e2));
  EXPECT_EQ(llvm::toString(std::move(e2)), "constant: needs a dense 'value' attribute");
  Op *split = f->append(std::make_unique<Op>("split", std::vector<Value *>{x}, std::vector<Type>(4)));
  split->setAttr("axis", int64_t(1));
  llvm::Error e3 = si.inferOp(*split);
  ASSERT_TRUE(static_cast<bool>(e3));
  EXPECT_EQ(llvm::toString(std::move(e3)),
            "split: axis 1 of f32[2, 3] does not split into 4 equal parts");
}

} // namespace

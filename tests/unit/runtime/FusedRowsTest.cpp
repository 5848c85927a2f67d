// cpu/FusedRows: which bodies run over pieces of the token axis (decided by
// evaluating them whole and in pieces), and that the pieces give the bits the
// whole body gives.
#include "runtime/cpu/FusedBody.h"
#include "runtime/cpu/FusedRows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace {

using namespace genrt;

ValueInfo value(DType dt, Shape shape, Storage st, int32_t index = -1) {
  ValueInfo v;
  v.dtype = v.stored = dt;
  v.shape = std::move(shape);
  v.storage = st;
  v.index = index;
  return v;
}

// body(x[1, tokens, 8], w[8]) = one op `kind` over x (and w), attributes `attrs`.
Program body(const std::string &kind, AttrMap attrs, bool withWeight) {
  Program p;
  p.name = "fused_test";
  Dim tokens = Dim::symbol("tokens");
  p.values.push_back(value(DType::F32, {1, tokens, 8}, Storage::Argument, 0));
  p.arguments.push_back(0);
  OpInfo op;
  op.kind = kind;
  op.attrs = std::move(attrs);
  op.operands = {0};
  if (withWeight) {
    p.values.push_back(value(DType::F32, {8}, Storage::Argument, 1));
    p.arguments.push_back(1);
    op.operands.push_back(1);
  }
  p.values.push_back(value(DType::F32, {1, tokens, 8}, Storage::Local));
  op.results = {static_cast<int32_t>(p.values.size() - 1)};
  p.ops.push_back(op);
  p.outputs = op.results;
  p.argumentNames = withWeight ? std::vector<std::string>{"in0", "in1"} : std::vector<std::string>{"in0"};
  p.outputNames = {"out0"};
  return p;
}

TEST(FusedRows, RowWiseBodiesRunInPiecesBitForBit) {
  Program norm = body("rms_norm", {{"axis", int64_t(-1)}, {"epsilon", 1e-6}}, true);
  cpu::FusedRows rows;
  ASSERT_TRUE(rows.prepare(norm, {}));
  const int64_t T = 75;
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  Tensor x(DType::F32, {1, T, 8}), w(DType::F32, {8});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.data<float>()[i] = g(rng);
  for (int64_t i = 0; i < 8; ++i)
    w.data<float>()[i] = g(rng);
  std::map<std::string, int64_t> syms{{"tokens", T}};
  cpu::KernelContext ctx;
  ctx.symbols = &syms;
  std::vector<Tensor> want(1);
  ASSERT_FALSE(cpu::runFusedBody(norm, {}, ctx, {x, w}, want));
  std::vector<float> buf(T * 8, -7.f);
  std::vector<Tensor> got{Tensor::view(DType::F32, {1, T, 8}, buf.data())};
  cpu::ThreadPool pool(3);
  ASSERT_FALSE(rows.run({}, syms, pool, {x, w}, got));
  EXPECT_EQ(std::memcmp(buf.data(), want[0].rawData(), buf.size() * sizeof(float)), 0);
}

TEST(FusedRows, BodiesThatMixTokensAreRefusedByEvaluation) {
  // Shapes alone look per token, but a running sum over tokens is not: the
  // probe in two pieces disagrees with the whole.
  cpu::FusedRows rows;
  EXPECT_FALSE(rows.prepare(body("cumsum", {{"axis", int64_t(1)}}, false), {}));
  // Softmax over the token axis: the same.
  EXPECT_FALSE(rows.prepare(body("softmax", {{"axis", int64_t(1)}}, false), {}));
  // ... while softmax over each token's row is fine.
  EXPECT_TRUE(rows.prepare(body("softmax", {{"axis", int64_t(-1)}}, false), {}));
}

} // namespace

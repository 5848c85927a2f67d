// cpu/FusedLoop: the bodies `fuse` forms for Llama- and GPT-2-style models
// (residual add + RMSNorm with two results, SwiGLU's split + silu + mul,
// embedding gathers + add + LayerNorm) compile to one loop over tokens, and
// the loop gives the op-by-op bits on fresh random inputs at any token count,
// inline and over a thread pool; bodies it does not take are refused, and a
// bad gather index is an error, not a read out of bounds.
#include "runtime/cpu/FusedBody.h"
#include "runtime/cpu/FusedLoop.h"
#include "runtime/cpu/FusedRows.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace {

using namespace genrt;

struct Builder {
  Program p;
  Dim tokens = Dim::symbol("tokens");
  int32_t arg(DType dt, Shape s) {
    ValueInfo v;
    v.dtype = v.stored = dt;
    v.shape = std::move(s);
    v.storage = Storage::Argument;
    v.index = static_cast<int32_t>(p.arguments.size());
    p.values.push_back(v);
    p.arguments.push_back(static_cast<int32_t>(p.values.size() - 1));
    p.argumentNames.push_back("in" + std::to_string(p.arguments.size()));
    return p.arguments.back();
  }
  std::vector<int32_t> op(const std::string &kind, std::vector<int32_t> operands, std::vector<Shape> results,
                          AttrMap attrs = {}, DType dt = DType::F32) {
    OpInfo o;
    o.kind = kind;
    o.operands = std::move(operands);
    o.attrs = std::move(attrs);
    for (Shape &s : results) {
      ValueInfo v;
      v.dtype = v.stored = dt;
      v.shape = std::move(s);
      v.storage = Storage::Local;
      p.values.push_back(v);
      o.results.push_back(static_cast<int32_t>(p.values.size() - 1));
    }
    p.ops.push_back(o);
    return p.ops.back().results;
  }
  void out(int32_t v) {
    p.outputs.push_back(v);
    p.outputNames.push_back("out" + std::to_string(p.outputs.size()));
  }
};

// add + rms_norm: (x + h, rms_norm(x + h) * w), both results.
Program addNorm() {
  Builder b;
  b.p.name = "add_norm";
  const int32_t x = b.arg(DType::F32, {1, b.tokens, 48}), h = b.arg(DType::F32, {1, b.tokens, 48}),
                w = b.arg(DType::F32, {48});
  const int32_t s = b.op("add", {x, h}, {{1, b.tokens, 48}})[0];
  const int32_t n = b.op("rms_norm", {s, w}, {{1, b.tokens, 48}}, {{"axis", int64_t(-1)}, {"epsilon", 1e-6}})[0];
  b.out(s);
  b.out(n);
  return b.p;
}

// split + silu + mul over the gate-up projection.
Program swiglu() {
  Builder b;
  b.p.name = "swiglu";
  const int32_t gu = b.arg(DType::F32, {b.tokens, 64});
  std::vector<int32_t> parts = b.op("split", {gu}, {{b.tokens, 32}, {b.tokens, 32}},
                                    {{"axis", int64_t(-1)}, {"split", std::vector<int64_t>{32, 32}}});
  const int32_t g = b.op("silu", {parts[0]}, {{b.tokens, 32}})[0];
  b.out(b.op("mul", {g, parts[1]}, {{b.tokens, 32}})[0]);
  return b.p;
}

// GPT-2's embedding: reshape(ids), wte[ids] + wpe[positions], LayerNorm; a
// scalar constant folded at load scales the sum.
Program embedNorm() {
  Builder b;
  b.p.name = "embed_norm";
  const int32_t wte = b.arg(DType::F32, {50, 24}), ids = b.arg(DType::I64, {1, b.tokens}),
                wpe = b.arg(DType::F32, {16, 24}), pos = b.arg(DType::I64, {1, b.tokens}),
                gamma = b.arg(DType::F32, {24}), beta = b.arg(DType::F32, {24});
  const int32_t e = b.op("gather", {wte, ids}, {{1, b.tokens, 24}}, {{"axis", int64_t(0)}})[0];
  const int32_t p = b.op("gather", {wpe, pos}, {{1, b.tokens, 24}}, {{"axis", int64_t(0)}})[0];
  const int32_t sum = b.op("add", {e, p}, {{1, b.tokens, 24}})[0];
  Tensor half(DType::F32, {});
  half.data<float>()[0] = 0.5f;
  const int32_t c = b.op("constant", {}, {{}}, {{"value", half}})[0];
  const int32_t scaled = b.op("mul", {sum, c}, {{1, b.tokens, 24}})[0];
  const int32_t shape = b.op("dims", {}, {{2}}, {{"value", DimList{{b.tokens, Dim(24)}}}}, DType::I64)[0];
  const int32_t flat = b.op("reshape", {scaled, shape}, {{b.tokens, 24}}, {{"allowzero", int64_t(1)}})[0];
  b.out(b.op("layer_norm", {flat, gamma, beta}, {{b.tokens, 24}}, {{"axis", int64_t(-1)}, {"epsilon", 1e-5}})[0]);
  return b.p;
}

using cpu::shapeAtTokens;

void expectLoopMatchesOpByOp(const Program &body) {
  cpu::FusedLoop loop;
  EXPECT_TRUE(loop.prepare(body, {})) << body.name;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> g;
  cpu::ThreadPool pool(3);
  for (int64_t T : {1, 7, 40, 113}) {
    std::vector<Tensor> ins;
    for (int32_t a : body.arguments) {
      const ValueInfo &v = body.values[a];
      Tensor t(v.dtype, shapeAtTokens(v.shape, T));
      for (int64_t i = 0; i < t.numElements(); ++i) {
        if (v.dtype == DType::F32)
          t.data<float>()[i] = g(rng);
        else // ids: any row of the smallest table (16), some negative
          t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 32) - 16;
      }
      ins.push_back(std::move(t));
    }
    std::map<std::string, int64_t> syms{{"tokens", T}};
    cpu::KernelContext ctx;
    ctx.symbols = &syms;
    std::vector<Tensor> want(body.outputs.size());
    cpu::Error be = cpu::runFusedBody(body, {}, ctx, ins, want);
    ASSERT_FALSE(be) << body.name << ": " << be.message();
    for (cpu::ThreadPool *p : {static_cast<cpu::ThreadPool *>(nullptr), &pool}) {
      std::vector<Tensor> got;
      for (int32_t o : body.outputs) { // poisoned first
        Tensor t(DType::F32, shapeAtTokens(body.values[o].shape, T));
        for (int64_t i = 0; i < t.numElements(); ++i)
          t.data<float>()[i] = -12345.f;
        got.push_back(std::move(t));
      }
      ASSERT_FALSE(loop.run(syms, p, ins, got)) << body.name;
      for (size_t j = 0; j < got.size(); ++j)
        EXPECT_EQ(std::memcmp(got[j].rawData(), want[j].rawData(), want[j].numBytes()), 0)
            << body.name << " result " << j << " at " << T << " tokens" << (p ? ", pool" : "");
    }
  }
}

TEST(FusedLoop, ModelBodiesMatchOpByOpBitForBit) {
  expectLoopMatchesOpByOp(addNorm());
  expectLoopMatchesOpByOp(swiglu());
  expectLoopMatchesOpByOp(embedNorm());
}

TEST(FusedLoop, RefusesBodiesItDoesNotTake) {
  // A running sum over tokens is not a row program.
  Builder b;
  const int32_t x = b.arg(DType::F32, {1, b.tokens, 8});
  b.out(b.op("cumsum", {x}, {{1, b.tokens, 8}}, {{"axis", int64_t(1)}})[0]);
  cpu::FusedLoop loop;
  EXPECT_FALSE(loop.prepare(b.p, {}));
  // A norm over the token axis.
  Builder n;
  const int32_t y = n.arg(DType::F32, {n.tokens, 8}), w = n.arg(DType::F32, {8});
  n.out(n.op("rms_norm", {y, w}, {{n.tokens, 8}}, {{"axis", int64_t(0)}, {"epsilon", 1e-6}})[0]);
  EXPECT_FALSE(loop.prepare(n.p, {}));
}

TEST(FusedLoop, ABadGatherIndexIsAnError) {
  const Program body = embedNorm();
  cpu::FusedLoop loop;
  ASSERT_TRUE(loop.prepare(body, {}));
  const int64_t T = 3;
  std::vector<Tensor> ins;
  for (int32_t a : body.arguments)
    ins.emplace_back(body.values[a].dtype, shapeAtTokens(body.values[a].shape, T));
  ins[1].data<int64_t>()[2] = 50; // wte has 50 rows
  std::vector<Tensor> got{Tensor(DType::F32, {T, 24})};
  std::map<std::string, int64_t> syms{{"tokens", T}};
  cpu::Error e = loop.run(syms, nullptr, ins, got);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_NE(e.message().find("index 50 is out of range for axis 0 of size 50"), std::string::npos) << e.message();
}

} // namespace

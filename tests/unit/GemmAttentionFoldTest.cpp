// fuse-gemms and fold-attention-io against the interpreter, on weights the
// fixtures cannot give: non-zero biases (the fixtures' are all zero), GPT-J
// style interleaved RoPE and a partial rotary dim. The folded attention's
// operands, unpacked by the CPU runtime (runtime/cpu/AttentionIo.h), must
// equal what the original prologue computes.
#include "compiler/interp/Interpreter.h"
#include "compiler/ir/Parser.h"
#include "passes/Passes.h"
#include "runtime/cpu/AttentionIo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace genc;

namespace {

std::unique_ptr<Module> parse(const std::string &text) {
  auto m = parseModule(text);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

Tensor randomTensor(const std::vector<int64_t> &shape, std::mt19937 &rng) {
  Tensor t(DType::F32, shape);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setDouble(i, d(rng));
  return t;
}

void giveWeightsData(Module &m, std::mt19937 &rng) {
  for (auto &w : m.weights()) {
    std::vector<int64_t> shape;
    for (const Dim &d : w->shape())
      shape.push_back(d.constant());
    w->setData(std::make_shared<Tensor>(randomTensor(shape, rng)));
  }
}

float maxAbsDiff(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape(), b.shape());
  float m = 0.f;
  for (int64_t i = 0; i < a.numElements() && i < b.numElements(); ++i)
    m = std::max(m, static_cast<float>(std::fabs(a.getDouble(i) - b.getDouble(i))));
  return m;
}

Op *findOp(Function &f, const char *kind) {
  for (auto &op : f.ops())
    if (op->is(kind))
      return op.get();
  return nullptr;
}

TEST(FuseGemms, FoldedEpiloguesAndMergedSiblingsComputeTheSame) {
  auto m = parse(R"(module {
  weight @wq : f32[16, 8]
  weight @bq : f32[8]
  weight @wk : f32[16, 4]
  weight @wv : f32[16, 4]
  weight @bv : f32[4]
  weight @w1 : f32[16, 12]
  weight @b1 : f32[12]
  weight @w2 : f32[16, 12]
  weight @b2 : f32[12]
  weight @wt : f32[20, 16]
  func @decode_step(%x: f32[1, tokens, 16], %x1: f32[1, tokens, 16], %x2: f32[1, tokens, 16]) -> (q: f32[1, tokens, 8], k: f32[1, tokens, 4], v: f32[1, tokens, 4], h1: f32[tokens, 12], h2: f32[1, tokens, 12], y: f32[1, tokens, 20]) {
    %q0 = matmul(%x, @wq) : f32[1, tokens, 8]
    %qb = add(%q0, @bq) : f32[1, tokens, 8]
    %k0 = matmul(%x, @wk) : f32[1, tokens, 4]
    %v0 = matmul(%x, @wv) : f32[1, tokens, 4]
    %vb = add(@bv, %v0) : f32[1, tokens, 4]
    %a1 = matmul(%x1, @w1) : f32[1, tokens, 12]
    %a1b = add(%a1, @b1) : f32[1, tokens, 12]
    %sh = dims() {value = shape<tokens, 12>} : i64[2]
    %a1r = reshape(%a1b, %sh) : f32[tokens, 12]
    %g1 = gelu(%a1r) {approximate = "tanh"} : f32[tokens, 12]
    %a2 = matmul(%x2, @w2) : f32[1, tokens, 12]
    %a2b = add(%a2, @b2) : f32[1, tokens, 12]
    %r2 = relu(%a2b) : f32[1, tokens, 12]
    %t = transpose(@wt) {perm = [1, 0]} : f32[16, 20]
    %y = matmul(%x, %t) : f32[1, tokens, 20]
    return %qb, %k0, %vb, %g1, %r2, %y
  }
})");
  ASSERT_TRUE(m);
  std::mt19937 rng(7);
  giveWeightsData(*m, rng);
  Function &f = *m->function("decode_step");
  std::vector<Tensor> in{randomTensor({1, 5, 16}, rng), randomTensor({1, 5, 16}, rng),
                         randomTensor({1, 5, 16}, rng)};
  auto before = interpret(*m, f, in);
  ASSERT_TRUE(!!before) << llvm::toString(before.takeError());
  ASSERT_FALSE(!!fuseGemmsPass(*m));
  EXPECT_EQ(findOp(f, "add"), nullptr);
  EXPECT_EQ(findOp(f, "gelu"), nullptr);
  EXPECT_EQ(findOp(f, "relu"), nullptr);
  EXPECT_EQ(findOp(f, "transpose"), nullptr);
  int matmuls = 0;
  for (auto &op : f.ops())
    matmuls += op->is("matmul");
  EXPECT_EQ(matmuls, 4); // qkv, w1, w2, wt
  auto after = interpret(*m, f, in);
  ASSERT_TRUE(!!after) << llvm::toString(after.takeError());
  ASSERT_EQ(before->size(), after->size());
  for (size_t i = 0; i < before->size(); ++i)
    EXPECT_LE(maxAbsDiff((*before)[i], (*after)[i]), 1e-5f) << "output " << i;
}

// q (2 heads), k and v (1 head each) of D = 8 from X[1, T, 32]; q and k
// rotated over their first 4 dims by `rot` (rotate_half or GPT-J's
// rotate_every_two) with tables @c and @s [32, 4]; `norm`: q and k
// RMS-normalised first, "head" per head (Qwen3), "row" over all of q's heads
// (OLMo2), as canonicalize writes it: rms_norm(x, ones) · weight.
std::string ropeModule(bool interleaved, const std::string &norm = "") {
  std::string rot = interleaved ? R"(
    %e{0} = slice(%{0}r, %z, %r4, %ax, %two) : f32[1, {1}, tokens, 2]
    %o{0} = slice(%{0}r, %one, %r4, %ax, %two) : f32[1, {1}, tokens, 2]
    %on{0} = neg(%o{0}) : f32[1, {1}, tokens, 2]
    %eu{0} = unsqueeze(%e{0}) {axes = [4]} : f32[1, {1}, tokens, 2, 1]
    %ou{0} = unsqueeze(%on{0}) {axes = [4]} : f32[1, {1}, tokens, 2, 1]
    %st{0} = concat(%ou{0}, %eu{0}) {axis = -1} : f32[1, {1}, tokens, 2, 2]
    %rs{0} = dims() {value = shape<1, {1}, tokens, 4>} : i64[4]
    %rot{0} = reshape(%st{0}, %rs{0}) : f32[1, {1}, tokens, 4]
)"
                                 : R"(
    %lo{0} = slice(%{0}r, %z, %two, %ax, %one) : f32[1, {1}, tokens, 2]
    %hi{0} = slice(%{0}r, %two, %r4, %ax, %one) : f32[1, {1}, tokens, 2]
    %hn{0} = neg(%hi{0}) : f32[1, {1}, tokens, 2]
    %rot{0} = concat(%hn{0}, %lo{0}) {axis = -1} : f32[1, {1}, tokens, 4]
)";
  auto head = [&](const std::string &n, const std::string &heads, const std::string &src) {
    std::string rowNorm = norm != "row" ? "" : R"(
    %{0}w0 = rms_norm({2}, @one{3}) {axis = -1, epsilon = 1e-06} : f32[1, tokens, {3}]
    %{0}w = mul(%{0}w0, @{0}n{3}) : f32[1, tokens, {3}])";
    std::string headNorm = norm != "head" ? "" : R"(
    %{0}hn0 = rms_norm(%{0}t, @one8) {axis = -1, epsilon = 1e-06} : f32[1, {1}, tokens, 8]
    %{0}h = mul(%{0}hn0, @{0}n8) : f32[1, {1}, tokens, 8])";
    std::string t = rowNorm + R"(
    %{0}1 = reshape()" + std::string(norm == "row" ? "%{0}w" : "{2}") + R"(, %hs{1}) : f32[1, tokens, {1}, 8]
    %{0})" + std::string(norm == "head" ? "t" : "h") + R"( = transpose(%{0}1) {perm = [0, 2, 1, 3]} : f32[1, {1}, tokens, 8])" +
                    headNorm + R"(
    %{0}r = slice(%{0}h, %z, %r4, %ax, %one) : f32[1, {1}, tokens, 4]
    %{0}p = slice(%{0}h, %r4, %r8, %ax, %one) : f32[1, {1}, tokens, 4])" +
                    rot + R"(
    %{0}c = mul(%{0}r, %cos) : f32[1, {1}, tokens, 4]
    %{0}s = mul(%rot{0}, %sin) : f32[1, {1}, tokens, 4]
    %{0}e = add(%{0}c, %{0}s) : f32[1, {1}, tokens, 4]
    %{0} = concat(%{0}e, %{0}p) {axis = -1} : f32[1, {1}, tokens, 8]
)";
    std::string width = std::to_string(8 * std::stoi(heads));
    for (auto [k, v] : {std::pair<std::string, std::string>{"{0}", n}, {"{1}", heads}, {"{2}", src},
                        {"{3}", width}})
      for (size_t p; (p = t.find(k)) != std::string::npos;)
        t.replace(p, 3, v);
    return t;
  };
  std::string prologue = R"(
    %q0, %k0, %v0 = split(%x) {axis = -1, split = [16, 8, 8]} : f32[1, tokens, 16], f32[1, tokens, 8], f32[1, tokens, 8]
    %hs2 = dims() {value = shape<1, tokens, 2, 8>} : i64[4]
    %hs1 = dims() {value = shape<1, tokens, 1, 8>} : i64[4]
    %z = constant() {value = dense<i64[1]: [0]>} : i64[1]
    %one = constant() {value = dense<i64[1]: [1]>} : i64[1]
    %two = constant() {value = dense<i64[1]: [2]>} : i64[1]
    %r4 = constant() {value = dense<i64[1]: [4]>} : i64[1]
    %r8 = constant() {value = dense<i64[1]: [8]>} : i64[1]
    %ax = constant() {value = dense<i64[1]: [-1]>} : i64[1]
    %cg = gather(@c, %positions) {axis = 0} : f32[1, tokens, 4]
    %sg = gather(@s, %positions) {axis = 0} : f32[1, tokens, 4]
    %ts = dims() {value = shape<1, 1, tokens, 4>} : i64[4]
    %cos = reshape(%cg, %ts) : f32[1, 1, tokens, 4]
    %sin = reshape(%sg, %ts) : f32[1, 1, tokens, 4])" +
                         head("q", "2", "%q0") + head("k", "1", "%k0") + R"(
    %v1 = reshape(%v0, %hs1) : f32[1, tokens, 1, 8]
    %v = transpose(%v1) {perm = [0, 2, 1, 3]} : f32[1, 1, tokens, 8]
)";
  return R"(module {
  weight @c : f32[32, 4]
  weight @s : f32[32, 4]
  weight @one8 : f32[8]
  weight @one16 : f32[16]
  weight @qn8 : f32[8]
  weight @kn8 : f32[8]
  weight @qn16 : f32[16]
  func @ref(%x: f32[1, tokens, 32], %positions: i64[1, tokens]) -> (q: f32[1, 2, tokens, 8], k: f32[1, 1, tokens, 8], v: f32[1, 1, tokens, 8]) {)" +
         prologue + R"(    return %q, %k, %v
  }
  func @decode_step(%x: f32[1, tokens, 32], %positions: i64[1, tokens]) -> (y: f32[1, 2, tokens, 8]) {)" +
         prologue + R"(    %y = kv_attention(%q, %k, %v) {head_dim = 8, layer = 0, num_heads = 2, num_kv_heads = 1, scale = 0.35, window = 0} : f32[1, 2, tokens, 8]
    return %y
  }
})";
}

void checkRopeFold(bool interleaved, const std::string &norm = "") {
  auto m = parse(ropeModule(interleaved, norm));
  ASSERT_TRUE(m);
  std::mt19937 rng(11);
  giveWeightsData(*m, rng);
  for (const char *ones : {"one8", "one16"}) {
    Value *w = m->weight(ones);
    Tensor t(DType::F32, {w->shape()[0].constant()});
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.setDouble(i, 1.0);
    w->setData(std::make_shared<Tensor>(t));
  }
  ASSERT_FALSE(!!foldAttentionIoPass(*m));
  Op *att = findOp(*m->function("decode_step"), "kv_attention");
  ASSERT_NE(att, nullptr);
  EXPECT_EQ(att->strAttr("rope"), interleaved ? "interleaved" : "half");
  EXPECT_EQ(att->intAttr("rotary_dim", 0), 4);
  EXPECT_EQ(att->intsAttr("qkv_offsets"), (std::vector<int64_t>{0, 16, 24}));
  ASSERT_EQ(att->numOperands(), norm.empty() ? 4u : 6u);
  EXPECT_EQ(att->operand(2)->name(), "c");
  EXPECT_EQ(att->operand(3)->name(), "s");
  std::vector<Tensor> ins{Tensor(), Tensor(), *att->operand(2)->data(), *att->operand(3)->data()};
  if (!norm.empty()) {
    EXPECT_EQ(att->operand(4)->name(), norm == "head" ? "qn8" : "qn16");
    EXPECT_EQ(att->operand(5)->name(), "kn8");
    EXPECT_FLOAT_EQ(att->floatAttr("qk_norm_epsilon", 0), 1e-6f);
    ins.push_back(*att->operand(4)->data());
    ins.push_back(*att->operand(5)->data());
  }

  Tensor x = randomTensor({1, 6, 32}, rng), pos(DType::I64, {1, 6});
  for (int64_t t = 0; t < 6; ++t)
    pos.setInt(t, (t * 13 + 3) % 32);
  auto ref = interpret(*m, *m->function("ref"), {x, pos});
  ASSERT_TRUE(!!ref) << llvm::toString(ref.takeError());
  genrt::cpu::AttentionIo io;
  ins[0] = x, ins[1] = pos;
  auto st = genrt::cpu::unpackAttention(att->attrs(), ins, 3, io);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(io.operands.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(maxAbsDiff((*ref)[i], io.operands[i]), 1e-6f) << "head operand " << i;
}

TEST(FoldAttentionIo, RotateHalfPartialRotaryMatchesTheRuntime) { checkRopeFold(false); }
TEST(FoldAttentionIo, InterleavedPartialRotaryMatchesTheRuntime) { checkRopeFold(true); }
TEST(FoldAttentionIo, PerHeadQkNormMatchesTheRuntime) { checkRopeFold(false, "head"); }
TEST(FoldAttentionIo, WholeRowQkNormMatchesTheRuntime) { checkRopeFold(true, "row"); }

} // namespace

// ONNX importer: weight bytes arrive intact (raw, typed fields, external
// data, misaligned offsets), the inline limit is honoured, encoder/decoder
// imports share one module, and damaged files give errors, never crashes.
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/Importer.h"
#include "genc_onnx/onnx.pb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

using namespace genc;

namespace {

/// A scratch folder for one test's files.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> p;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("genc-onnx-test", p));
    path_ = std::string(p.str());
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path_); }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream os(path, std::ios::binary);
  os << bytes;
}

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

/// A model whose graph returns each initializer through an Identity node.
struct ModelBuilder {
  onnx::ModelProto model;
  ModelBuilder() {
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    model.mutable_graph()->set_name("g");
  }
  onnx::TensorProto *initializer(const std::string &name, int dtype, std::vector<int64_t> dims) {
    auto *t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    for (int64_t d : dims)
      t->add_dims(d);
    auto *n = model.mutable_graph()->add_node();
    n->set_op_type("Identity");
    n->set_name("id_" + name);
    n->add_input(name);
    n->add_output("out_" + name);
    model.mutable_graph()->add_output()->set_name("out_" + name);
    return t;
  }
  std::string write(const std::string &path) const {
    writeFile(path, model.SerializeAsString());
    return path;
  }
};

std::unique_ptr<Module> importOk(const std::string &path, const ImportOptions &opts = {}) {
  auto m = importOnnxFile(path, opts);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  if (auto e = verifyModule(**m))
    ADD_FAILURE() << llvm::toString(std::move(e));
  return std::move(*m);
}

std::string importError(const std::string &path) {
  auto m = importOnnxFile(path);
  if (m)
    return "(imported)";
  return llvm::toString(m.takeError());
}

TEST(OnnxImporter, WeightsKeepTheirStoredDtypeAndValues) {
  TempDir dir;
  ModelBuilder b;
  std::vector<float> f32(20);
  std::vector<uint16_t> f16(18);
  std::vector<int64_t> i64(17);
  for (size_t i = 0; i < f32.size(); ++i)
    f32[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (size_t i = 0; i < f16.size(); ++i)
    f16[i] = floatToHalf(static_cast<float>(i) - 3.0f);
  for (size_t i = 0; i < i64.size(); ++i)
    i64[i] = (int64_t(1) << 40) + static_cast<int64_t>(i);
  b.initializer("raw_f32", onnx::TensorProto::FLOAT, {4, 5})->set_raw_data(bytesOf(f32));
  auto *typed = b.initializer("typed_f32", onnx::TensorProto::FLOAT, {20});
  for (float v : f32)
    typed->add_float_data(v);
  b.initializer("raw_f16", onnx::TensorProto::FLOAT16, {18})->set_raw_data(bytesOf(f16));
  auto *typedHalf = b.initializer("typed_f16", onnx::TensorProto::FLOAT16, {18});
  for (uint16_t v : f16)
    typedHalf->add_int32_data(v);
  auto *typedI64 = b.initializer("typed_i64", onnx::TensorProto::INT64, {17});
  for (int64_t v : i64)
    typedI64->add_int64_data(v);
  auto *typedBool = b.initializer("typed_bool", onnx::TensorProto::BOOL, {17});
  for (int i = 0; i < 17; ++i)
    typedBool->add_int32_data(i % 3 == 0);

  auto m = importOk(b.write(dir.file("m.onnx")));
  ASSERT_TRUE(m);
  ASSERT_EQ(m->weights().size(), 6u);
  for (const char *name : {"raw_f32", "typed_f32"}) {
    const Tensor *t = m->weight(name)->data();
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->dtype(), DType::F32);
    for (size_t i = 0; i < f32.size(); ++i)
      EXPECT_EQ(t->data<float>()[i], f32[i]) << name << "[" << i << "]";
  }
  EXPECT_EQ(m->weight("raw_f32")->data()->shape(), (std::vector<int64_t>{4, 5}));
  for (const char *name : {"raw_f16", "typed_f16"}) {
    const Tensor *t = m->weight(name)->data();
    EXPECT_EQ(t->dtype(), DType::F16);
    EXPECT_EQ(std::memcmp(t->rawData(), f16.data(), f16.size() * 2), 0) << name;
  }
  const Tensor *ti = m->weight("typed_i64")->data();
  EXPECT_EQ(ti->dtype(), DType::I64);
  for (size_t i = 0; i < i64.size(); ++i)
    EXPECT_EQ(ti->data<int64_t>()[i], i64[i]);
  const Tensor *tb = m->weight("typed_bool")->data();
  EXPECT_EQ(tb->dtype(), DType::Bool);
  for (int i = 0; i < 17; ++i)
    EXPECT_EQ(tb->getInt(i), i % 3 == 0);
}

TEST(OnnxImporter, InlineLimitDecidesWeightOrConstant) {
  TempDir dir;
  ModelBuilder b;
  b.initializer("four", onnx::TensorProto::FLOAT, {4})
      ->set_raw_data(bytesOf(std::vector<float>{1, 2, 3, 4}));
  std::string path = b.write(dir.file("m.onnx"));

  ImportOptions asWeights;
  asWeights.inlineConstantLimit = 3;
  auto m = importOk(path, asWeights);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->weight("four"));

  ImportOptions inlined;
  inlined.inlineConstantLimit = 4;
  m = importOk(path, inlined);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->weights().empty());
  const Op &c = *m->functions()[0]->ops().front();
  ASSERT_TRUE(c.is("constant"));
  ASSERT_TRUE(c.tensorAttr("value"));
  EXPECT_EQ(c.tensorAttr("value")->getDouble(3), 4.0);
  EXPECT_EQ(c.loc(), "four");
}

void setExternal(onnx::TensorProto *t, const std::string &location, int64_t offset,
                 int64_t length) {
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char *k, const std::string &v) {
    auto *e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0)
    add("length", std::to_string(length));
}

TEST(OnnxImporter, ExternalDataIsReadAtItsOffset) {
  TempDir dir;
  std::vector<float> a(32), c(17);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i) * 2.0f;
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = -static_cast<float>(i);
  // a at 0, c at the odd offset 129: read by copying, not by a misaligned view.
  std::string data = bytesOf(a) + std::string(1, '\x7f') + bytesOf(c);
  writeFile(dir.file("m.onnx.data"), data);
  ModelBuilder b;
  setExternal(b.initializer("a", onnx::TensorProto::FLOAT, {32}), "m.onnx.data", 0, 128);
  setExternal(b.initializer("c", onnx::TensorProto::FLOAT, {17}), "m.onnx.data", 129, -1);
  auto m = importOk(b.write(dir.file("m.onnx")));
  ASSERT_TRUE(m);
  const Tensor *ta = m->weight("a")->data(), *tc = m->weight("c")->data();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(ta->data<float>()[i], a[i]);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tc->rawData()) % alignof(float), 0u);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(tc->data<float>()[i], c[i]);
}

TEST(OnnxImporter, ExternalDataErrorsNameTensorAndFile) {
  TempDir dir;
  writeFile(dir.file("w.bin"), std::string(64, '\0'));
  auto errorFor = [&](int64_t offset, int64_t length) {
    ModelBuilder b;
    setExternal(b.initializer("w", onnx::TensorProto::FLOAT, {20}), "w.bin", offset, length);
    return importError(b.write(dir.file("m.onnx")));
  };
  std::string tooShort = errorFor(0, -1);
  EXPECT_NE(tooShort.find("initializer 'w'"), std::string::npos) << tooShort;
  EXPECT_NE(tooShort.find("w.bin' is too short"), std::string::npos) << tooShort;
  std::string pastEnd = errorFor(1000, 80);
  EXPECT_NE(pastEnd.find("is too short"), std::string::npos) << pastEnd;
  std::string badLength = errorFor(0, 12);
  EXPECT_NE(badLength.find("external data length 12 does not match its shape (80 bytes)"),
            std::string::npos)
      << badLength;
}

TEST(OnnxImporter, SecondImportSharesIdenticalWeightsAndPrefixesOthers) {
  TempDir dir;
  auto model = [&](const std::string &file, float wValue) {
    ModelBuilder b;
    b.initializer("w", onnx::TensorProto::FLOAT, {20})
        ->set_raw_data(bytesOf(std::vector<float>(20, wValue)));
    b.initializer("tied", onnx::TensorProto::FLOAT, {20})
        ->set_raw_data(bytesOf(std::vector<float>(20, 3.0f)));
    return b.write(dir.file(file));
  };
  Module m;
  ImportOptions enc;
  enc.functionName = "encode";
  ASSERT_FALSE(static_cast<bool>(importOnnxFileInto(m, model("enc.onnx", 1.0f), enc, "decoder.")));
  ImportOptions dec;
  dec.functionName = "decode";
  std::string path = model("dec.onnx", 2.0f);
  ASSERT_FALSE(static_cast<bool>(importOnnxFileInto(m, path, dec, "decoder.")));
  // Same name, other bytes: renamed. Same name and bytes: one weight.
  ASSERT_TRUE(m.weight("w"));
  ASSERT_TRUE(m.weight("decoder.w"));
  EXPECT_EQ(m.weight("decoder.w")->data()->getDouble(0), 2.0);
  EXPECT_EQ(m.weight("decoder.tied"), nullptr);
  EXPECT_EQ(m.weights().size(), 3u);
  auto operand0 = [&](const char *f, size_t i) {
    auto it = m.function(f)->ops().begin();
    std::advance(it, i);
    return (*it)->operand(0);
  };
  EXPECT_EQ(operand0("encode", 0), m.weight("w"));
  EXPECT_EQ(operand0("decode", 0), m.weight("decoder.w"));
  EXPECT_EQ(operand0("encode", 1), m.weight("tied"));
  EXPECT_EQ(operand0("decode", 1), m.weight("tied"));
  EXPECT_FALSE(static_cast<bool>(verifyModule(m)));

  llvm::Error again = importOnnxFileInto(m, path, dec, "x.");
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_NE(llvm::toString(std::move(again)).find("already has a function @decode"),
            std::string::npos);

  // A failed import leaves no function behind.
  ModelBuilder bad;
  bad.initializer("v", onnx::TensorProto::FLOAT, {20})
      ->set_raw_data(bytesOf(std::vector<float>(20, 1.0f)));
  bad.model.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  ImportOptions third;
  third.functionName = "third";
  llvm::Error failed = importOnnxFileInto(m, bad.write(dir.file("bad.onnx")), third, "");
  ASSERT_TRUE(static_cast<bool>(failed));
  llvm::consumeError(std::move(failed));
  EXPECT_EQ(m.function("third"), nullptr);
  EXPECT_EQ(m.functions().size(), 2u);
}

/// A small model touching the interesting paths: arguments, initializers,
/// Constant nodes, axes inputs, Split, Slice.
std::string sampleModel() {
  ModelBuilder b;
  auto &g = *b.model.mutable_graph();
  auto *in = g.add_input();
  in->set_name("x");
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(8);
  b.initializer("w", onnx::TensorProto::FLOAT, {8})
      ->set_raw_data(bytesOf(std::vector<float>(8, 0.5f)));
  auto node = [&](const char *op, std::vector<std::string> ins, std::vector<std::string> outs) {
    auto *n = g.add_node();
    n->set_op_type(op);
    n->set_name(std::string(op) + "_n");
    for (auto &s : ins)
      n->add_input(s);
    for (auto &s : outs)
      n->add_output(s);
    return n;
  };
  auto *c = node("Constant", {}, {"axes"});
  auto *a = c->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(0);
  node("Add", {"x", "w"}, {"s"});
  node("Unsqueeze", {"s", "axes"}, {"u"});
  auto *split = node("Split", {"s"}, {"p", "q"});
  auto *ax = split->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(1);
  node("Slice", {"p", "axes", "axes"}, {"r"});
  g.add_output()->set_name("u");
  g.add_output()->set_name("q");
  g.add_output()->set_name("r");
  return b.model.SerializeAsString();
}

TEST(OnnxImporter, EveryTruncationIsAnErrorNotACrash) {
  TempDir dir;
  std::string bytes = sampleModel();
  ASSERT_TRUE(importOk([&] {
    writeFile(dir.file("full.onnx"), bytes);
    return dir.file("full.onnx");
  }()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string path = dir.file("cut.onnx");
    writeFile(path, bytes.substr(0, n));
    auto m = importOnnxFile(path);
    if (m)
      (void)verifyModule(**m); // a cut at a field boundary may still be a model
    else
      llvm::consumeError(m.takeError());
  }
}

TEST(OnnxImporter, CorruptedBytesAreAnErrorNotACrash) {
  TempDir dir;
  std::string bytes = sampleModel();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string mutated = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      mutated[rng() % mutated.size()] = static_cast<char>(rng() & 0xff);
    std::string path = dir.file("bad.onnx");
    writeFile(path, mutated);
    auto m = importOnnxFile(path);
    if (m) {
      if (auto e = verifyModule(**m))
        llvm::consumeError(std::move(e));
    } else {
      std::string msg = llvm::toString(m.takeError());
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

} // namespace

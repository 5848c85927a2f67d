// .npy: every dtype survives serialize -> parse; headers are what numpy writes.
#include "compiler/interp/Npy.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace genc;

namespace {

Tensor sample(DType dt, std::vector<int64_t> shape) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setDouble(i, dt == DType::Bool ? (i % 3 == 0) : (i * 1.5 - 4));
  return t;
}

TEST(Npy, RoundTripsEveryDType) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I64, DType::I32, DType::I8,
                   DType::U8, DType::Bool}) {
    for (auto shape : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
      Tensor t = sample(dt, shape);
      std::string bytes = serializeNpy(t);
      // numpy pads the header so the data starts 64-byte aligned.
      ASSERT_EQ((bytes.size() - t.numBytes()) % 64, 0u) << dtypeName(dt);
      auto back = parseNpy(bytes, "mem");
      ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
      EXPECT_EQ(back->dtype(), dt);
      EXPECT_EQ(back->shape(), shape);
      EXPECT_EQ(std::memcmp(back->rawData(), t.rawData(), t.numBytes()), 0) << dtypeName(dt);
    }
  }
}

TEST(Npy, HeaderSpellsShapesLikeNumpy) {
  EXPECT_NE(serializeNpy(sample(DType::F32, {})).find("'shape': (), }"), std::string::npos);
  EXPECT_NE(serializeNpy(sample(DType::F32, {7})).find("'shape': (7,), }"), std::string::npos);
  EXPECT_NE(serializeNpy(sample(DType::I64, {2, 3})).find("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(serializeNpy(sample(DType::Bool, {1})).find("'|b1'"), std::string::npos);
}

TEST(Npy, Bf16IsWrittenAsF32) {
  Tensor t(DType::BF16, {2});
  t.setDouble(0, 1.5);
  t.setDouble(1, -3.0);
  auto back = parseNpy(serializeNpy(t), "mem");
  ASSERT_TRUE(static_cast<bool>(back));
  EXPECT_EQ(back->dtype(), DType::F32);
  EXPECT_EQ(back->data<float>()[1], -3.0f);
}

TEST(Npy, RejectsWithoutCrashing) {
  std::string good = serializeNpy(sample(DType::F32, {2, 3}));
  // Every prefix of a valid file is an error, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = parseNpy(good.substr(0, n), "cut");
    EXPECT_FALSE(static_cast<bool>(r)) << n;
    llvm::consumeError(r.takeError());
  }
  // Corrupting any header byte gives either an error or some valid array.
  for (size_t i = 0; i < good.size() - 24; ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto r = parseNpy(bad, "flip");
    if (!r)
      llvm::consumeError(r.takeError());
  }
}

} // namespace

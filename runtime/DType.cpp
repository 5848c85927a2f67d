#include "runtime/DType.h"

namespace genrt {

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::F32, "f32", 4}, {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2},
    {DType::F64, "f64", 8}, {DType::I64, "i64", 8}, {DType::I32, "i32", 4},
    {DType::I8, "i8", 1},   {DType::U8, "u8", 1},   {DType::Bool, "bool", 1},
};
} // namespace

const char *dtypeName(DType t) { return kInfo[static_cast<int>(t)].name; }
size_t dtypeSize(DType t) { return kInfo[static_cast<int>(t)].size; }

std::optional<DType> parseDType(std::string_view s) {
  for (const auto &i : kInfo)
    if (s == i.name)
      return i.type;
  return std::nullopt;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}
bool isInteger(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8;
}

} // namespace genrt

// Element types of IR values and tensors.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace genrt {

enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I8, U8, Bool };

/// Text spelling used by the IR printer/parser: f32 f16 bf16 f64 i64 i32 i8 u8 bool.
const char *dtypeName(DType t);
std::optional<DType> parseDType(std::string_view s);
/// Bytes per element as stored in a tensor buffer (bool is one byte).
size_t dtypeSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t);

} // namespace genrt

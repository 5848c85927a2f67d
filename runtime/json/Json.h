// A small strict JSON reader and writer for the runtime's I/O (prompt and
// result JSON lines). The runtime may not use LLVM's json, so it has its own.
//
// Strict means RFC 8259 and nothing more: no comments, no trailing commas, no
// NaN/Infinity, no leading zeros, no raw control characters in strings, valid
// UTF-8, unique object keys. Integers that fit in int64 are kept exactly.
#pragma once
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace genrt {
namespace json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default; // null
  static Value null() { return Value(); }
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value array(std::vector<Value> items = {});
  static Value object(std::vector<std::pair<std::string, Value>> members = {});

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  /// A number written without fraction or exponent that fits in int64.
  bool isInteger() const { return kind_ == Kind::Number && isInt_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return bool_; }
  int64_t asInt() const { return int_; }
  double asDouble() const { return isInt_ ? double(int_) : num_; }
  const std::string &asString() const { return str_; }
  const std::vector<Value> &items() const { return items_; }
  std::vector<Value> &items() { return items_; }
  /// Object members in the order they were read or added.
  const std::vector<std::pair<std::string, Value>> &members() const { return members_; }
  std::vector<std::pair<std::string, Value>> &members() { return members_; }
  /// The member named `key`, or nullptr.
  const Value *find(const std::string &key) const;

  /// "null", "a boolean", "a number", ... for error messages.
  static const char *kindName(Kind k);

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool isInt_ = false;
  int64_t int_ = 0;
  double num_ = 0;
  std::string str_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

/// Parses one complete JSON text (surrounding whitespace allowed). Errors
/// read "LINE:COL: message", counting from 1 within `text`.
Status parse(const std::string &text, Value &out);

/// Compact serialization (no spaces). Doubles are written with the fewest
/// digits that read back to the same double; non-finite doubles (which JSON
/// cannot hold) are written as null.
std::string write(const Value &v);
void write(const Value &v, std::string &out);

} // namespace json
} // namespace genrt

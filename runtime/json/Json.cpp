#include "runtime/json/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace genrt {
namespace json {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Number;
  v.isInt_ = true;
  v.int_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::Number;
  v.num_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.str_ = std::move(s);
  return v;
}
Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::Array;
  v.items_ = std::move(items);
  return v;
}
Value Value::object(std::vector<std::pair<std::string, Value>> members) {
  Value v;
  v.kind_ = Kind::Object;
  v.members_ = std::move(members);
  return v;
}

const Value *Value::find(const std::string &key) const {
  for (const auto &m : members_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

const char *Value::kindName(Kind k) {
  switch (k) {
  case Kind::Null: return "null";
  case Kind::Bool: return "a boolean";
  case Kind::Number: return "a number";
  case Kind::String: return "a string";
  case Kind::Array: return "an array";
  case Kind::Object: return "an object";
  }
  return "?";
}

namespace {

// Deep nesting would otherwise overflow the stack on hostile input.
constexpr int kMaxDepth = 256;

class Parser {
public:
  explicit Parser(const std::string &text) : s_(text) {}

  Status run(Value &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return err_;
    skipSpace();
    if (pos_ != s_.size()) {
      failHere("unexpected text after the JSON value: " + describeHere());
      return err_;
    }
    return Status::ok();
  }

private:
  const std::string &s_;
  size_t pos_ = 0;
  Status err_ = Status::ok();

  bool fail(size_t at, const std::string &msg) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    err_ = Status::error(std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
    return false;
  }
  bool failHere(const std::string &msg) { return fail(pos_, msg); }

  bool atEnd() const { return pos_ >= s_.size(); }
  char peek() const { return atEnd() ? '\0' : s_[pos_]; }

  void skipSpace() {
    while (!atEnd() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  std::string describeHere() const {
    if (atEnd())
      return "end of input";
    unsigned char c = s_[pos_];
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + char(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  bool parseValue(Value &out, int depth) {
    if (depth > kMaxDepth)
      return failHere("nesting deeper than " + std::to_string(kMaxDepth));
    char c = peek();
    switch (c) {
    case '{': return parseObject(out, depth);
    case '[': return parseArray(out, depth);
    case '"': {
      std::string str;
      if (!parseString(str))
        return false;
      out = Value::string(std::move(str));
      return true;
    }
    case 't': return parseWord("true", Value::boolean(true), out);
    case 'f': return parseWord("false", Value::boolean(false), out);
    case 'n': return parseWord("null", Value::null(), out);
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return failHere("expected a JSON value, found " + describeHere());
    }
  }

  bool parseWord(const char *word, Value v, Value &out) {
    size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0)
      return failHere("expected a JSON value, found " + describeHere());
    pos_ += n;
    out = std::move(v);
    return true;
  }

  bool parseNumber(Value &out) {
    size_t start = pos_;
    bool isInt = true;
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9')
        return failHere("leading zeros are not allowed in JSON numbers");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    } else {
      return failHere("expected a digit, found " + describeHere());
    }
    if (peek() == '.') {
      isInt = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return failHere("expected a digit after '.', found " + describeHere());
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      isInt = false;
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return failHere("expected a digit in the exponent, found " + describeHere());
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    std::string text = s_.substr(start, pos_ - start);
    if (isInt) {
      errno = 0;
      char *end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size()) {
        out = Value::integer(v);
        return true;
      }
      // Out of int64 range: keep it as a double, like most readers do.
    }
    errno = 0;
    double d = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(d))
      return fail(start, "number " + text + " is out of range");
    out = Value::number(d);
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  bool parseHex4(uint32_t &v) {
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return failHere("expected 4 hex digits after \\u, found " + describeHere());
      v = v * 16 + d;
      ++pos_;
    }
    return true;
  }

  // Validates one UTF-8 sequence starting at pos_ and copies it.
  bool copyUtf8(std::string &out) {
    size_t start = pos_;
    unsigned char c = s_[pos_];
    int len;
    uint32_t cp;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return failHere("invalid UTF-8 in string");
    }
    if (pos_ + len > s_.size())
      return failHere("invalid UTF-8 in string");
    for (int i = 1; i < len; ++i) {
      unsigned char cc = s_[pos_ + i];
      if ((cc & 0xC0) != 0x80)
        return failHere("invalid UTF-8 in string");
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t minForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return failHere("invalid UTF-8 in string");
    out.append(s_, start, len);
    pos_ += len;
    return true;
  }

  bool parseString(std::string &out) {
    size_t open = pos_;
    ++pos_; // the opening quote
    while (true) {
      if (atEnd())
        return fail(open, "unterminated string");
      unsigned char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20)
        return failHere(c == '\n' ? "unterminated string (raw newline)"
                                  : "raw control character in string (escape it)");
      if (c != '\\') {
        if (!copyUtf8(out))
          return false;
        continue;
      }
      ++pos_;
      char e = peek();
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        size_t escAt = pos_ - 1;
        ++pos_;
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return fail(escAt, "unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (s_.compare(pos_, 2, "\\u") != 0)
            return fail(escAt, "unpaired high surrogate in \\u escape");
          pos_ += 2;
          uint32_t lo;
          if (!parseHex4(lo))
            return false;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(escAt, "unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(out, cp);
        continue; // pos_ is already past the escape
      }
      default:
        return fail(pos_ - 1, "invalid escape \\" + (atEnd() ? std::string() : std::string(1, e)) +
                                  " in string");
      }
      ++pos_;
    }
  }

  bool parseArray(Value &out, int depth) {
    ++pos_; // '['
    std::vector<Value> items;
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      out = Value::array(std::move(items));
      return true;
    }
    while (true) {
      skipSpace();
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      items.push_back(std::move(v));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        skipSpace();
        if (peek() == ']')
          return failHere("trailing comma in array");
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        out = Value::array(std::move(items));
        return true;
      }
      return failHere("expected ',' or ']' in array, found " + describeHere());
    }
  }

  bool parseObject(Value &out, int depth) {
    ++pos_; // '{'
    std::vector<std::pair<std::string, Value>> members;
    std::unordered_set<std::string> seen;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      out = Value::object(std::move(members));
      return true;
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return failHere("expected a string key in object, found " + describeHere());
      size_t keyAt = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      // Linear for the usual small objects; a vocabulary (tokenizer.json
      // holds objects of 100k+ keys) switches to a hash set.
      bool dup = false;
      if (members.size() < 32) {
        for (const auto &m : members)
          dup = dup || m.first == key;
      } else {
        if (seen.empty())
          for (const auto &m : members)
            seen.insert(m.first);
        dup = !seen.insert(key).second;
      }
      if (dup)
        return fail(keyAt, "duplicate key \"" + key + "\" in object");
      skipSpace();
      if (peek() != ':')
        return failHere("expected ':' after object key, found " + describeHere());
      ++pos_;
      skipSpace();
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      members.emplace_back(std::move(key), std::move(v));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        skipSpace();
        if (peek() == '}')
          return failHere("trailing comma in object");
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = Value::object(std::move(members));
        return true;
      }
      return failHere("expected ',' or '}' in object, found " + describeHere());
    }
  }
};

void writeString(const std::string &s, std::string &out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

void writeDouble(double d, std::string &out) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[32];
  // The shortest precision that round-trips, so 0.1 prints as 0.1.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  out += buf;
  // "1e+20" and "3" are valid JSON; keep them, they read back as the same double.
}

} // namespace

Status parse(const std::string &text, Value &out) {
  Parser p(text);
  return p.run(out);
}

void write(const Value &v, std::string &out) {
  switch (v.kind()) {
  case Value::Kind::Null: out += "null"; break;
  case Value::Kind::Bool: out += v.asBool() ? "true" : "false"; break;
  case Value::Kind::Number:
    if (v.isInteger())
      out += std::to_string(v.asInt());
    else
      writeDouble(v.asDouble(), out);
    break;
  case Value::Kind::String: writeString(v.asString(), out); break;
  case Value::Kind::Array: {
    out += '[';
    bool first = true;
    for (const Value &item : v.items()) {
      if (!first)
        out += ',';
      first = false;
      write(item, out);
    }
    out += ']';
    break;
  }
  case Value::Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &m : v.members()) {
      if (!first)
        out += ',';
      first = false;
      writeString(m.first, out);
      out += ':';
      write(m.second, out);
    }
    out += '}';
    break;
  }
  }
}

std::string write(const Value &v) {
  std::string out;
  write(v, out);
  return out;
}

} // namespace json
} // namespace genrt

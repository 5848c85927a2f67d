#include "runtime/json/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using genrt::Status;
using genrt::json::Value;
namespace json = genrt::json;

namespace {
std::string errorOf(const std::string &text) {
  Value v;
  Status s = json::parse(text, v);
  return s.isOk() ? "OK" : s.message();
}
std::string roundTrip(const std::string &text) {
  Value v;
  Status s = json::parse(text, v);
  return s.isOk() ? json::write(v) : "ERROR " + s.message();
}
} // namespace

TEST(Json, ParsesAndWritesEveryKind) {
  EXPECT_EQ(roundTrip(R"( {"a": [1, -2, 3.5, true, false, null, "x"], "b": {}, "c": []} )"),
            R"({"a":[1,-2,3.5,true,false,null,"x"],"b":{},"c":[]})");
}

TEST(Json, KeepsInt64Exactly) {
  Value v;
  ASSERT_TRUE(json::parse("[9223372036854775807, -9223372036854775808, 0, -0]", v).isOk());
  EXPECT_TRUE(v.items()[0].isInteger());
  EXPECT_EQ(v.items()[0].asInt(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(v.items()[1].asInt(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(json::write(v), "[9223372036854775807,-9223372036854775808,0,0]");
  // Beyond int64: a double, not an integer.
  ASSERT_TRUE(json::parse("9223372036854775808", v).isOk());
  EXPECT_FALSE(v.isInteger());
  EXPECT_TRUE(v.isNumber());
  ASSERT_TRUE(json::parse("1.0", v).isOk());
  EXPECT_FALSE(v.isInteger());
  ASSERT_TRUE(json::parse("1e2", v).isOk());
  EXPECT_FALSE(v.isInteger());
  EXPECT_EQ(v.asDouble(), 100.0);
}

TEST(Json, DoublesRoundTripShortest) {
  EXPECT_EQ(json::write(Value::number(0.1)), "0.1");
  EXPECT_EQ(json::write(Value::number(-4.7021164894104)), "-4.7021164894104");
  // A float32 score widened to double prints as Python prints it.
  EXPECT_EQ(json::write(Value::number(double(-4.7021164894104f))), "-4.7021164894104");
  double d = double(-17.970457077026367f);
  Value v;
  ASSERT_TRUE(json::parse(json::write(Value::number(d)), v).isOk());
  EXPECT_EQ(v.asDouble(), d);
  EXPECT_EQ(json::write(Value::number(std::numeric_limits<double>::infinity())), "null");
}

TEST(Json, StringEscapes) {
  Value v;
  ASSERT_TRUE(json::parse(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\ud83d\ude00")", v).isOk());
  EXPECT_EQ(v.asString(), "a\"b\\c/d\b\f\n\r\tA\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(json::write(Value::string("q\"\\\n\x01")), R"("q\"\\\n\u0001")");
  ASSERT_TRUE(json::parse("\"\xc3\xa9\"", v).isOk()); // raw UTF-8 passes through
  EXPECT_EQ(v.asString(), "\xc3\xa9");
}

TEST(Json, ErrorsGiveLineAndColumn) {
  EXPECT_EQ(errorOf("[1, 2,]"), "1:7: trailing comma in array");
  EXPECT_EQ(errorOf("{\"a\": 1,\n \"b\" 2}"), "2:6: expected ':' after object key, found '2'");
  EXPECT_EQ(errorOf("[1 2]"), "1:4: expected ',' or ']' in array, found '2'");
  EXPECT_EQ(errorOf(""), "1:1: expected a JSON value, found end of input");
  EXPECT_EQ(errorOf("[1,\n\n  x]"), "3:3: expected a JSON value, found 'x'");
  EXPECT_EQ(errorOf("{\"a\":1} x"), "1:9: unexpected text after the JSON value: 'x'");
  EXPECT_EQ(errorOf("\"abc"), "1:1: unterminated string");
  EXPECT_EQ(errorOf("[01]"), "1:3: leading zeros are not allowed in JSON numbers");
  EXPECT_EQ(errorOf("[1.]"), "1:4: expected a digit after '.', found ']'");
  EXPECT_EQ(errorOf("[-]"), "1:3: expected a digit, found ']'");
  EXPECT_EQ(errorOf("[1e]"), "1:4: expected a digit in the exponent, found ']'");
  EXPECT_EQ(errorOf("{\"a\":1,\"a\":2}"), "1:8: duplicate key \"a\" in object");
  EXPECT_EQ(errorOf("{1:2}"), "1:2: expected a string key in object, found '1'");
  EXPECT_EQ(errorOf("[tru]"), "1:2: expected a JSON value, found 't'");
  EXPECT_EQ(errorOf("\"a\\x\""), "1:3: invalid escape \\x in string");
  EXPECT_EQ(errorOf("\"\\ud800\""), "1:2: unpaired high surrogate in \\u escape");
  EXPECT_EQ(errorOf("\"\\udc00\""), "1:2: unpaired low surrogate in \\u escape");
  EXPECT_EQ(errorOf("\"\\u12G4\""), "1:6: expected 4 hex digits after \\u, found 'G'");
  EXPECT_EQ(errorOf("\"a\tb\""), "1:3: raw control character in string (escape it)");
  EXPECT_EQ(errorOf("\"\xff\""), "1:2: invalid UTF-8 in string");
  EXPECT_EQ(errorOf("\"\xc0\xaf\""), "1:2: invalid UTF-8 in string"); // overlong
  EXPECT_EQ(errorOf("NaN"), "1:1: expected a JSON value, found 'N'");
  EXPECT_EQ(errorOf("[1e999]"), "1:2: number 1e999 is out of range");
  EXPECT_EQ(errorOf("// c\n1"), "1:1: expected a JSON value, found '/'");
}

TEST(Json, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  std::string msg = errorOf(deep);
  EXPECT_NE(msg.find("nesting deeper than"), std::string::npos) << msg;
  std::string ok(200, '[');
  ok += std::string(200, ']');
  EXPECT_EQ(errorOf(ok), "OK");
}

TEST(Json, ObjectLookupKeepsOrder) {
  Value v;
  ASSERT_TRUE(json::parse(R"({"z":1,"a":2})", v).isOk());
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_EQ(v.find("a")->asInt(), 2);
  EXPECT_EQ(v.find("nope"), nullptr);
  EXPECT_EQ(json::write(v), R"({"z":1,"a":2})");
}

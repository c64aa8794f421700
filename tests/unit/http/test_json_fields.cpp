// Typed request fields: every wrong type, out-of-range or non-finite number
// is an error naming the field, never an exception or a silent truncation.
#include <gtest/gtest.h>

#include <limits>

#include "http/json_fields.h"

using namespace stride::server;
using json = nlohmann::json;

TEST(JsonFields, DepthIsBoundedBeforeParsing) {
  const std::string deep = "{\"prompt\":" + std::string(400000, '[') + std::string(400000, ']') + "}";
  json out;
  ApiError e = parse_json_object(deep, out);
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("nests deeper"), std::string::npos);
  // Brackets inside strings do not count; 64 levels are fine.
  std::string ok64 = std::string(63, '[') + std::string(63, ']');
  EXPECT_TRUE(parse_json_object("{\"a\":" + ok64 + ",\"s\":\"[[[[[[[[\\\"[[[[\"}", out).ok());
  EXPECT_EQ(parse_json_object("{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}", out).status, 400);
  EXPECT_EQ(json_nesting_depth("\"{{{{\"", 10), 0);
  EXPECT_EQ(parse_json_object("[1,2]", out).status, 400);      // not an object
  EXPECT_EQ(parse_json_object("{\"a\":", out).status, 400);     // malformed
  EXPECT_EQ(parse_json_object("{\"a\":1e999}", out).status, 400);  // overflowing numbers are malformed
}

TEST(JsonFields, IntegersAreRangeCheckedNeverTruncated) {
  json b = json::parse(R"({"a": 4294967297, "b": 18446744073709551615, "c": -1, "d": 3.5, "e": "3", "f": 7,
                           "g": true, "h": null, "i": 4.0, "j": 1e300})");
  Fields f(b);
  int v = 5;
  EXPECT_EQ(f.opt_int("a", 1, INT32_MAX, v).param, "a");
  EXPECT_EQ(f.opt_int("b", 1, INT32_MAX, v).status, 400);
  EXPECT_EQ(f.opt_int("c", 0, 10, v).status, 400);
  EXPECT_EQ(f.opt_int("d", 0, 10, v).status, 400);
  EXPECT_EQ(f.opt_int("e", 0, 10, v).status, 400);
  EXPECT_EQ(f.opt_int("g", 0, 10, v).status, 400);
  EXPECT_EQ(v, 5);  // untouched by the failures
  EXPECT_TRUE(f.opt_int("h", 0, 10, v).ok());  // null: absent
  EXPECT_TRUE(f.opt_int("missing", 0, 10, v).ok());
  EXPECT_EQ(v, 5);
  EXPECT_TRUE(f.opt_int("f", 0, 10, v).ok());
  EXPECT_EQ(v, 7);
  // JSON Schema's integer type includes numbers with a zero fractional part.
  EXPECT_TRUE(f.opt_int("i", 0, 10, v).ok());
  EXPECT_EQ(v, 4);
  EXPECT_EQ(f.opt_int("j", 0, INT32_MAX, v).param, "j");  // integral, but beyond any range
  int64_t wide = 0;
  EXPECT_EQ(f.opt_int("j", INT64_MIN, INT64_MAX, wide).status, 400);
}

TEST(JsonFields, NumbersMustBeFiniteAndInRange) {
  json b;
  ASSERT_TRUE(parse_json_object(R"({"x": 0.5, "lo": 0, "s": "1", "big": 2.5})", b).ok());
  b["inf"] = std::numeric_limits<double>::infinity();  // not expressible in JSON text, but in a json value
  b["neg"] = -std::numeric_limits<double>::infinity();
  b["nan"] = std::numeric_limits<double>::quiet_NaN();
  Fields f(b);
  float v = 9;
  EXPECT_EQ(f.opt_number("inf", 0, 2, v).status, 400);
  EXPECT_EQ(f.opt_number("neg", -5, 2, v).status, 400);
  EXPECT_EQ(f.opt_number("nan", -5, 2, v).status, 400);
  EXPECT_EQ(f.opt_number("s", 0, 2, v).status, 400);
  EXPECT_EQ(f.opt_number("big", 0, 2, v).status, 400);
  EXPECT_EQ(f.opt_number("lo", 0, 1, v, /*lo_open=*/true).status, 400);
  EXPECT_EQ(v, 9);
  EXPECT_TRUE(f.opt_number("x", 0, 1, v, true).ok());
  EXPECT_FLOAT_EQ(v, 0.5f);
}

TEST(JsonFields, StringsAndBooleansAreTyped) {
  json b = json::parse(R"({"s": "abcdef", "n": 1, "t": true, "z": "no"})");
  Fields f(b);
  std::string s;
  EXPECT_EQ(f.opt_string("s", 3, s).status, 400);
  EXPECT_EQ(f.opt_string("n", 10, s).status, 400);
  EXPECT_TRUE(f.opt_string("s", 6, s).ok());
  EXPECT_EQ(s, "abcdef");
  bool flag = false;
  EXPECT_EQ(f.opt_bool("z", flag).param, "z");
  EXPECT_EQ(f.opt_bool("n", flag).status, 400);
  EXPECT_TRUE(f.opt_bool("t", flag).ok());
  EXPECT_TRUE(flag);
}

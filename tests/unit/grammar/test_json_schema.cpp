// JSON schema -> grammar: instances written by hand against the JSON Schema
// rules, integer ranges against plain arithmetic, and the refusals.
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_states.h"
#include "grammar/json_schema.h"
#include "grammar/schema_numbers.h"

namespace stride::grammar {
namespace {

using json = nlohmann::json;

class Accepts {
 public:
  explicit Accepts(const std::string& gbnf) {
    auto g = compile_gbnf(gbnf);
    EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
    if (g.ok()) states_ = std::make_unique<GrammarStates>(*g);
  }
  bool operator()(const std::string& s) {
    if (!states_) return false;
    uint32_t st = states_->initial();
    for (char c : s) st = states_->advance(st, (uint8_t)c);
    return states_->accepting(st);
  }

 private:
  std::unique_ptr<GrammarStates> states_;
};

Accepts for_schema(const json& schema, bool strict = true) {
  SchemaOptions o;
  o.strict = strict;
  auto g = json_schema_to_gbnf(schema, o);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return Accepts(g.ok() ? *g : "root ::= \"\\x00\"");
}

std::string error_of(const json& schema, bool strict = true) {
  SchemaOptions o;
  o.strict = strict;
  auto g = json_schema_to_gbnf(schema, o);
  return g.ok() ? "" : g.status().message();
}

TEST(JsonSchema, IntegerRangesMatchArithmetic) {
  std::mt19937_64 rng(5);
  const std::vector<std::pair<int64_t, int64_t>> fixed = {{0, 0},     {0, 9},       {1, 10},    {-5, 5},   {-120, -7},
                                                          {17, 4321}, {-999, 1000}, {100, 199}, {98, 1002}};
  std::vector<std::pair<int64_t, int64_t>> ranges = fixed;
  for (int k = 0; k < 30; ++k) {
    int64_t a = (int64_t)(rng() % 20001) - 10000, b = (int64_t)(rng() % 20001) - 10000;
    ranges.push_back({std::min(a, b), std::max(a, b)});
  }
  for (auto [lo, hi] : ranges) {
    Accepts ok("root ::= " + integer_range_gbnf(lo, hi));
    for (int64_t n = lo - 30; n <= hi + 30; n += (hi - lo > 3000 ? 7 : 1)) {
      ASSERT_EQ(ok(std::to_string(n)), n >= lo && n <= hi) << lo << ".." << hi << ": " << n;
    }
    EXPECT_FALSE(ok("-0"));
    if (lo <= 5 && hi >= 5) {
      EXPECT_FALSE(ok("05"));
    }
  }
}

TEST(JsonSchema, BoundedNumbersStayInside) {
  Accepts ok = for_schema({{"type", "number"}, {"minimum", 0.5}, {"exclusiveMaximum", 3}});
  EXPECT_TRUE(ok("1"));
  EXPECT_TRUE(ok("2"));
  EXPECT_TRUE(ok("1.25"));
  EXPECT_FALSE(ok("0"));
  EXPECT_FALSE(ok("3"));
  EXPECT_TRUE(ok("2.5"));
  EXPECT_FALSE(ok("3.5"));
  EXPECT_FALSE(ok("0.7"));  // a documented gap: I.f needs I within the bounds
  EXPECT_FALSE(ok("2.50"));  // fractions end in a non-zero digit
  Accepts open = for_schema({{"type", "number"}, {"exclusiveMinimum", 0}, {"exclusiveMaximum", 1}});
  EXPECT_TRUE(open("0.5"));
  EXPECT_TRUE(open("0.001"));
  EXPECT_FALSE(open("0.0"));
  EXPECT_FALSE(open("0"));
  EXPECT_FALSE(open("1"));
  EXPECT_EQ(error_of({{"type", "integer"}, {"minimum", 3}, {"maximum", 2}}),
            "schema at '#': no integer that stride can write satisfies the minimum/maximum bounds");
}

TEST(JsonSchema, ObjectsRequiredOptionalAndAdditional) {
  const json person = {{"type", "object"},
                       {"properties",
                        {{"name", {{"type", "string"}, {"maxLength", 5}}},
                         {"age", {{"type", "integer"}, {"minimum", 0}, {"maximum", 150}}},
                         {"tags", {{"type", "array"}, {"items", {{"enum", {"a", "b"}}}}, {"maxItems", 2}}}}},
                       {"required", {"name"}},
                       {"additionalProperties", false}};
  Accepts ok = for_schema(person);
  EXPECT_TRUE(ok(R"({"name":"Ann"})"));
  EXPECT_TRUE(ok(R"({ "age": 40, "name": "Bob", "tags": ["a", "b"] })"));
  EXPECT_TRUE(ok("{\n  \"name\": \"x\",\n  \"tags\": []\n}"));
  EXPECT_FALSE(ok(R"({"age":40})"));                    // name is required
  EXPECT_FALSE(ok(R"({"name":"Annabel"})"));            // maxLength
  EXPECT_FALSE(ok(R"({"name":"A","age":151})"));        // maximum
  EXPECT_FALSE(ok(R"({"name":"A","tags":["a","b","a"]})"));  // maxItems
  EXPECT_FALSE(ok(R"({"name":"A","other":1})"));        // additionalProperties false

  Accepts none_required = for_schema({{"properties", {{"a", {{"type", "null"}}}, {"b", {{"type", "boolean"}}}}}});
  EXPECT_TRUE(none_required("{}"));
  EXPECT_TRUE(none_required(R"({"b":true})"));
  EXPECT_TRUE(none_required(R"({"a":null,"b":false})"));
  EXPECT_FALSE(none_required(R"({,"b":true})"));

  Accepts extra = for_schema({{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}});
  EXPECT_TRUE(extra(R"({"x":1,"y":2})"));
  EXPECT_FALSE(extra(R"({"x":"1"})"));
}

TEST(JsonSchema, StringsEnumsAnyOfRefs) {
  Accepts pat = for_schema({{"type", "string"}, {"pattern", "^[A-Z]{2}-\\d{3}$"}});
  EXPECT_TRUE(pat(R"("AB-123")"));
  EXPECT_FALSE(pat(R"("AB-12")"));
  Accepts quote = for_schema({{"type", "string"}, {"pattern", "^a\"b\\\\$"}});
  EXPECT_TRUE(quote(R"("a\"b\\")"));
  Accepts date = for_schema({{"type", "string"}, {"format", "date"}});
  EXPECT_TRUE(date(R"("2026-12-02")"));
  EXPECT_FALSE(date(R"("2026-13-02")"));
  Accepts e = for_schema({{"enum", {"red", 1, nullptr, {{"k", true}}}}});
  EXPECT_TRUE(e(R"("red")"));
  EXPECT_TRUE(e("1"));
  EXPECT_TRUE(e("null"));
  EXPECT_TRUE(e(R"({"k":true})"));
  EXPECT_FALSE(e(R"("blue")"));
  Accepts any = for_schema({{"anyOf", {{{"type", "integer"}}, {{"type", "string"}, {"maxLength", 1}}}}});
  EXPECT_TRUE(any("12"));
  EXPECT_TRUE(any(R"("x")"));
  EXPECT_FALSE(any(R"("xy")"));
  const json tree = {{"$defs", {{"node", {{"type", "object"},
                                          {"properties", {{"v", {{"type", "integer"}}},
                                                          {"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}},
                                          {"required", {"v"}},
                                          {"additionalProperties", false}}}}},
                     {"$ref", "#/$defs/node"}};
  Accepts t = for_schema(tree);
  EXPECT_TRUE(t(R"({"kids":[{"v":2},{"kids":[],"v":3}],"v":1})"));
  EXPECT_FALSE(t(R"({"kids":[{}],"v":1})"));
  Accepts all = for_schema({{"allOf", {{{"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}},
                                       {{"properties", {{"b", {{"type", "integer"}}}}}, {"required", {"b"}}}}}});
  EXPECT_TRUE(all(R"({"a":1,"b":2})"));
  EXPECT_FALSE(all(R"({"a":1})"));
  // additionalProperties false in a part admits only that part's properties.
  Accepts narrowed = for_schema(
      {{"allOf", {{{"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}}, {"required", {"a"}},
                   {"additionalProperties", false}},
                  {{"properties", {{"c", {{"type", "integer"}}}}}}}}});
  EXPECT_TRUE(narrowed(R"({"a":1,"b":2})"));
  EXPECT_FALSE(narrowed(R"({"a":1,"c":2})"));
  EXPECT_EQ(error_of({{"allOf", {{{"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}},
                                  {"additionalProperties", false}},
                                 {{"properties", {{"b", {{"type", "integer"}}}}}, {"required", {"b"}},
                                  {"additionalProperties", false}}}}}),
            "schema at '#': allOf: no object satisfies every part ('a' is required, but a part does not allow it)");
  Accepts obj(json_object_gbnf());
  EXPECT_TRUE(obj(R"({"a":[1,2.5e3,{"b":null}],"c":"\u00e9\n"})"));
  EXPECT_FALSE(obj("[1]"));
}

TEST(JsonSchema, PropertiesInTheOrderWritten) {
  const auto text = R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                        "pet": {"properties": {"z": {"type": "null"}, "a": {"type": "null"}}, "required": ["z", "a"]}},
                        "required": ["name", "age"]})";
  SchemaOptions o;
  o.property_order = property_order_of(nlohmann::ordered_json::parse(text));
  auto g = json_schema_to_gbnf(json::parse(text), o);
  ASSERT_TRUE(g.ok()) << g.status().message();
  Accepts ok(*g);
  EXPECT_TRUE(ok(R"({"name":"x","age":1})"));
  EXPECT_TRUE(ok(R"({"name":"x","age":1,"pet":{"z":null,"a":null}})"));
  EXPECT_FALSE(ok(R"({"age":1,"name":"x"})"));
  EXPECT_FALSE(ok(R"({"name":"x","age":1,"pet":{"a":null,"z":null}})"));
  // Without the order, keys are sorted.
  Accepts sorted = for_schema(json::parse(text), false);
  EXPECT_TRUE(sorted(R"({"age":1,"name":"x"})"));
}

TEST(JsonSchema, Refusals) {
  EXPECT_EQ(error_of({{"type", "string"}, {"minLength", 2}, {"contentEncoding", "base64"}}),
            "schema at '#': the keyword 'contentEncoding' is not supported with strict: true");
  EXPECT_EQ(error_of({{"type", "string"}, {"contentEncoding", "base64"}}, false), "");
  EXPECT_EQ(error_of({{"type", "array"}, {"uniqueItems", true}}),
            "schema at '#': the keyword 'uniqueItems' is not supported with strict: true");
  EXPECT_EQ(error_of({{"type", "strin"}}), "schema at '#': unknown type 'strin'");
  EXPECT_EQ(error_of({{"$ref", "#/$defs/missing"}}), "schema at '#': '#/$defs/missing' does not resolve");
  EXPECT_EQ(error_of({{"$ref", "http://x/y"}}), "schema at '#': only local references ('#/...') are supported");
  EXPECT_EQ(error_of({{"type", "string"}, {"maxLength", 100000}}),
            "schema at '#': 'maxLength' above 1000 is not supported");
  EXPECT_EQ(error_of({{"properties", {{"a", {{"type", "string"}, {"pattern", "(a)\\1"}}}}}}),
            "schema at '#/properties/a': pattern: word boundaries and backreferences are not supported (at offset 4)");
  EXPECT_EQ(error_of({{"minItems", "3"}}), "schema at '#': 'minItems' must be a non-negative integer");
  EXPECT_EQ(error_of(json(false)), "schema at '#': the schema 'false' allows nothing");
  EXPECT_EQ(error_of(json(3)), "schema at '#': a schema must be an object or a boolean");
  // A schema that refers to itself before anything is written cannot be run.
  auto g = json_schema_to_gbnf({{"$ref", "#"}});
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(compile_gbnf(*g).ok());
}

}  // namespace
}  // namespace stride::grammar

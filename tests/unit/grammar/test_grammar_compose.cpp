// Writing a parsed grammar back as GBNF (optionally under a rule prefix)
// keeps its language: checked with the reference matcher on random grammars.
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_compose.h"
#include "grammar/json_schema.h"
#include "grammar/reference_matcher.h"
#include "random_grammar.h"

namespace stride::grammar {
namespace {

using testing::probes;
using testing::RandomGrammar;

TEST(GrammarCompose, WrittenBackGrammarsKeepTheirLanguage) {
  RandomGrammar gen(4242);
  int compared = 0;
  for (int g = 0; g < 200; ++g) {
    const std::string text = gen.make(1 + gen.pick(3));
    auto ast = parse_gbnf(text);
    ASSERT_TRUE(ast.ok()) << ast.status().message();
    if (!compile_grammar(*ast).ok()) continue;  // what the reference matcher needs (see its header)
    // Plain, and under a prefix behind a root that refers to it.
    auto plain = parse_gbnf(gbnf_of(*ast));
    ASSERT_TRUE(plain.ok()) << plain.status().message() << "\n" << gbnf_of(*ast);
    auto prefixed = gbnf_prefixed(text, "p-");
    ASSERT_TRUE(prefixed.ok()) << prefixed.status().message();
    std::string wrapped_text = "root ::= p-root\n";
    wrapped_text += *prefixed;
    auto wrapped = parse_gbnf(wrapped_text);
    ASSERT_TRUE(wrapped.ok()) << wrapped.status().message() << "\n" << *prefixed;
    const ReferenceMatcher want(*ast), got_plain(*plain), got_wrapped(*wrapped);
    for (const std::string& s : probes(gen, *ast)) {
      auto w = want.accepts_within(s, 200000);
      auto p = got_plain.accepts_within(s, 400000);
      auto q = got_wrapped.accepts_within(s, 400000);
      if (!w || !p || !q) continue;
      EXPECT_EQ(*w, *p) << text << "\n---\n" << gbnf_of(*ast) << "\non '" << s << "'";
      EXPECT_EQ(*w, *q) << text << "\non '" << s << "'";
      ++compared;
    }
  }
  EXPECT_GT(compared, 2000);
}

TEST(GrammarCompose, SchemaGrammarUnderAPrefix) {
  const auto schema = nlohmann::json::parse(
      R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
          "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})");
  auto gbnf = json_schema_to_gbnf(schema);
  ASSERT_TRUE(gbnf.ok());
  auto prefixed = gbnf_prefixed(*gbnf, "t3-");
  ASSERT_TRUE(prefixed.ok()) << prefixed.status().message();
  std::string text = "root ::= \"<\" t3-root \">\"\n";
  text += *prefixed;
  auto ast = parse_gbnf(text);
  ASSERT_TRUE(ast.ok()) << ast.status().message();
  for (const auto& [name, body] : ast->index) {
    EXPECT_TRUE(name == "root" || name.rfind("t3-", 0) == 0) << name;
  }
  const ReferenceMatcher m(*ast);
  EXPECT_TRUE(m.accepts(R"(<{"city": "Oslo", "days": 3}>)"));
  EXPECT_TRUE(m.accepts(R"(<{"city": "Rome"}>)"));
  EXPECT_FALSE(m.accepts(R"(<{"days": 3}>)"));
  EXPECT_FALSE(m.accepts(R"(<{"city": "Oslo", "days": 9}>)"));
  EXPECT_FALSE(m.accepts(R"(<{"city": "Rotterdam!"}>)"));
}

TEST(GrammarCompose, ErrorsComeFromTheParser) {
  auto bad = gbnf_prefixed("root ::= x", "p-");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'x', which is not defined"), std::string::npos);
}

}  // namespace
}  // namespace stride::grammar

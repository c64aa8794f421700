// The GBNF dialect: what it accepts, and the errors (with positions) and
// limits for what it does not.
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/reference_matcher.h"

namespace stride::grammar {
namespace {

std::string error_of(const std::string& text, const GrammarLimits& limits = {}) {
  auto g = compile_gbnf(text, limits);
  return g.ok() ? "" : g.status().message();
}

bool accepts(const std::string& grammar, const std::string& s) {
  auto ast = parse_gbnf(grammar);
  EXPECT_TRUE(ast.ok()) << ast.status().message();
  return ast.ok() && ReferenceMatcher(*ast).accepts(s);
}

TEST(GbnfParser, Syntax) {
  const std::string g =
      "# a comment\n"
      "root ::= greeting ( \",\" ws name )? \"!\"{1,3}  # trailing comment\n"
      "greeting ::= \"hi\" | \"h\\u00e9llo\"\n"
      "name ::= [A-Z] [a-z\\-]*\n"
      "ws ::= [ \\t\\n]*\n";
  EXPECT_TRUE(accepts(g, "hi!"));
  EXPECT_TRUE(accepts(g, "h\xC3\xA9llo, Ann-marie!!!"));
  EXPECT_FALSE(accepts(g, "hi!!!!"));
  EXPECT_FALSE(accepts(g, "hi, ann!"));
  // A rule body may span lines; the next `name ::=` ends it.
  EXPECT_TRUE(accepts("root ::= \"a\"\n  \"b\"\n  | \"c\"\nunused ::= \"d\"", "ab"));
  EXPECT_TRUE(accepts("root ::= [^\"\\\\] \".\" .", "x.\xE2\x82\xAC"));
  EXPECT_FALSE(accepts("root ::= [^\"\\\\]", "\""));
  EXPECT_TRUE(accepts("root ::= \"\\x41\\U0001F600\"", "A\xF0\x9F\x98\x80"));
  EXPECT_TRUE(accepts("root ::= [a]{2,}", "aaaaa"));
  EXPECT_FALSE(accepts("root ::= [a]{2,}", "a"));
}

TEST(GbnfParser, ErrorsNamePositions) {
  EXPECT_EQ(error_of("root ::= \"a\"\nx ::= \"b"), "grammar: line 2, column 9: unterminated string literal");
  EXPECT_EQ(error_of("root ::= ( \"a\" "), "grammar: line 1, column 16: expected ')'");
  EXPECT_EQ(error_of("root ::= [b-a]"), "grammar: line 1, column 14: a class range ends before it starts");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "grammar: line 1, column 18: {m,n} needs m <= n");
  EXPECT_EQ(error_of("root ::= \"a\"**"), "grammar: line 1, column 14: two repetition operators in a row; use a group");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "grammar: line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(error_of("root = \"a\""), "grammar: line 1, column 6: expected '::=' after the rule name 'root'");
  EXPECT_EQ(error_of("x ::= \"a\""), "grammar: there is no 'root' rule");
  EXPECT_EQ(error_of("root ::= y"), "grammar: the rule 'root' refers to 'y', which is not defined");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "grammar: line 2, column 1: the rule 'root' is defined twice");
  EXPECT_NE(error_of("root ::= [^\\x00-\\U0010FFFF]").find("matches no character"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\xFF\"").find("not valid UTF-8"), std::string::npos);
}

TEST(GbnfParser, RefusesWhatCannotRun) {
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("'root' is left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= x \"a\"\nx ::= y? root | \"d\"\ny ::= \"c\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" root").find("can never finish"), std::string::npos);
  // Right recursion, nullable loops and recursion after a byte are fine.
  EXPECT_EQ(error_of("root ::= \"a\" root | \"b\""), "");
  EXPECT_EQ(error_of("root ::= (\"a\"?)* \"b\""), "");
  EXPECT_EQ(error_of("root ::= \"(\" root \")\" root | \"\""), "");
}

TEST(GbnfParser, Limits) {
  GrammarLimits small;
  small.max_text_bytes = 64;
  EXPECT_NE(error_of("root ::= \"" + std::string(100, 'a') + "\"", small).find("longer than 64 bytes"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{1001}").find("limited to 1000"), std::string::npos);
  EXPECT_NE(error_of(std::string("root ::= ") + std::string(100, '(') + "\"a\"" + std::string(100, ')'))
                .find("nested too deeply"),
            std::string::npos);
  // Many bounded repeats add up: refused by the expanded size, quickly.
  std::string many = "root ::=";
  for (int k = 0; k < 250; ++k) many += " \"a\"{0,1000}";
  EXPECT_NE(error_of(many).find("too large once expanded"),
            std::string::npos);
}

}  // namespace
}  // namespace stride::grammar

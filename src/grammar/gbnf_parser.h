#pragma once
// Parses the GBNF dialect (docs/serving.md, "Grammars"):
//
//   root   ::= "{" ws pair ( "," ws pair )* "}"   # comments run to the line end
//   pair   ::= [a-z]+ ":" ws ( digit{1,3} | "null" )
//   digit  ::= [0-9]
//   ws     ::= [ \t\n]*
//
// Rules are `name ::= alternatives`; a rule ends where the next `name ::=`
// begins. Items: "literal" (escapes \n \r \t \\ \" \' \[ \] \xHH \uHHHH
// \UHHHHHHHH), [class] / [^class] with ranges, `.` (any character), a rule
// name, ( group ); postfix * + ? {m} {m,} {m,n}. `root` is the start rule.
// Errors name the line and column; sizes and nesting are bounded so that a
// hostile grammar is refused quickly.
#include <string_view>

#include "core/status.h"
#include "grammar/grammar_ast.h"

namespace stride::grammar {

struct GrammarLimits {
  size_t max_text_bytes = 256 * 1024;
  int max_nesting = 64;       // nested groups
  int max_repeat = 1000;      // the m and n of {m,n}
  size_t max_rules = 20000;   // user rules
  size_t max_elements = 1 << 20;  // after lowering to bytes (compile_grammar)
};

Expected<GrammarAst> parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace stride::grammar

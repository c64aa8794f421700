#pragma once
// Writing GBNF text: literals and classes with every byte escaped as the
// parser expects, so generated grammars round-trip through parse_gbnf().
#include <string>
#include <string_view>

#include "grammar/grammar_ast.h"

namespace stride::grammar {

// "..." matching exactly `bytes` (valid UTF-8).
std::string gbnf_literal(std::string_view bytes);
// [...] matching one code point of `chars` (non-empty).
std::string gbnf_class(const CodepointSet& chars);

}  // namespace stride::grammar

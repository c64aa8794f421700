#pragma once
// A JSON-schema `pattern` (an ECMA-262 regular expression) as GBNF over the
// characters of a JSON string's content. The subset: literals and escapes
// (\d \w \s \D \W \S, \. \\ \/ and other escaped punctuation, \n \r \t,
// \uXXXX), classes [...] / [^...] with ranges, `.`, groups ( ) and (?: ),
// alternation, and the quantifiers * + ? {m} {m,} {m,n}. Without a leading
// ^ or trailing $, any text may come before or after (the regex searches).
// A character the JSON text must escape is written escaped ( \" \\ ); control
// characters are never generated. Anything else (backreferences,
// lookaround, \b, lazy quantifiers) is refused with InvalidArgument.
#include <string>
#include <string_view>

#include "core/status.h"

namespace stride::grammar {

// `json_char` names the rule for any one JSON string character (used for
// the text around an unanchored pattern).
Expected<std::string> pattern_to_gbnf(std::string_view pattern, const std::string& json_char);

}  // namespace stride::grammar

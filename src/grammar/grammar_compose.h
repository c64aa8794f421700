#pragma once
// Building one grammar out of several: a grammar's rules copied into another
// under a name prefix, so that generated grammars (one per JSON schema) can
// sit side by side in a larger one without their rule names clashing.
#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_ast.h"

namespace stride::grammar {

// GBNF text of every rule of `ast`, each named `prefix` + its name (so its
// start rule is `prefix` + "root"); parse_gbnf() reads it back to the same
// grammar up to the renaming.
std::string gbnf_of(const GrammarAst& ast, const std::string& prefix = "");

// parse_gbnf(text) written back with `prefix` on every rule name.
Expected<std::string> gbnf_prefixed(std::string_view text, const std::string& prefix,
                                    const GrammarLimits& limits = {});

}  // namespace stride::grammar

#pragma once
// What compile_grammar() refuses, each in linear time so that a large
// hostile grammar costs little: rules that can never finish, and left
// recursion (a rule reaching itself before it consumes a byte while work is
// left behind it, which would grow the matcher's stacks without end).
#include "core/status.h"
#include "grammar/compiled_grammar.h"

namespace stride::grammar {

Status check_productive(const CompiledGrammar& g);
Status check_left_recursion(const CompiledGrammar& g);

}  // namespace stride::grammar

#pragma once
// Recursive-descent parser for the Jinja2 subset chat templates use.
// Nesting is bounded so that a hostile template cannot overflow the stack.
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace stride::jinja {

inline constexpr int kMaxParseDepth = 128;

// Throws JinjaError(Syntax).
Body parse(const std::vector<Token>& tokens);

}  // namespace stride::jinja

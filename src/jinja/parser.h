#pragma once
// Recursive-descent parser for the Jinja2 subset chat templates use.
// Nesting is bounded so that a hostile template cannot overflow the stack.
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace stride::jinja {

inline constexpr int kMaxParseDepth = 128;  // nested blocks and brackets
inline constexpr int kMaxExprDepth = 256;   // height of one expression tree (a+a+a..., x|f|f...)

// Throws JinjaError(Syntax).
Body parse(const std::vector<Token>& tokens);

}  // namespace stride::jinja

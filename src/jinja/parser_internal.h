#pragma once
// The parser's classes, shared by parser.cpp (statements) and
// expression_parser.cpp (expressions). Internal to src/jinja/.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace stride::jinja {

// A position in the token list with the helpers both parsers use.
class TokenCursor {
 public:
  explicit TokenCursor(const std::vector<Token>& t) : t_(t) {}

 protected:
  struct DepthGuard {
    int& d;
    DepthGuard(int& depth, size_t line) : d(depth) {
      if (++d > kMaxParseDepth) {
        throw JinjaError(ErrorKind::Limit, "template nested too deeply (line " + std::to_string(line) + ")");
      }
    }
    ~DepthGuard() { --d; }
  };

  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  [[noreturn]] void error(const std::string& what) const {
    throw JinjaError(ErrorKind::Syntax, what + " (line " + std::to_string(peek().line) + ")");
  }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).type == TokenType::Op && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).type == TokenType::Name && peek(k).text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) error(std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (peek().type != TokenType::Name) error("expected a name");
    return next().text;
  }
  void expect_block_end() {
    if (peek().type != TokenType::BlockEnd) error("expected end of statement '%}'");
    ++i_;
  }

  // Every finished node checks the height of its tree, so a long chain
  // (1+1+1..., x|f|f...) is refused before evaluating or destroying it recurses too deep.
  ExprPtr finish(ExprPtr e) {
    int d = 0;
    if (e->target) d = std::max(d, e->target->depth);
    for (const ExprPtr& a : e->args) {
      if (a) d = std::max(d, a->depth);
    }
    for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth) {
      throw JinjaError(ErrorKind::Limit, "expression nested too deeply (line " + std::to_string(e->line) + ")");
    }
    return e;
  }

  ExprPtr make(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = peek().line;
    return e;
  }

  // `a, b` without brackets is a tuple (for iterables and set values).

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

class ExpressionParser : protected TokenCursor {
 public:
  using TokenCursor::TokenCursor;

 protected:
  ExprPtr parse_tuple_or_expression(bool allow_cond);
  ExprPtr parse_expression();
  ExprPtr binary_node(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_subscript(ExprPtr target);
  void parse_call_args(Expr* call);
  ExprPtr parse_filter_chain(ExprPtr target, bool leading_pipe = true);
  ExprPtr parse_filters_and_tests(ExprPtr e);
};

class Parser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;
  Body parse_template();

 private:
  // Statements until one of `ends` ({% end... %}); its name is returned in *end.
  Body parse_body(std::initializer_list<const char*> ends, std::string* end);
  NodePtr parse_statement(const Token& kw);
  void parse_params(Node* n);
};

}  // namespace stride::jinja

#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "jinja/error.h"

namespace stride::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_template() {
    std::string end;
    Body b = parse_body({}, &end);
    return b;
  }

 private:
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

  // Statements until one of `ends` ({% end... %}); its name is returned in *end.
  Body parse_body(std::initializer_list<const char*> ends, std::string* end) {
    DepthGuard g(depth_, peek().line);
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.type == TokenType::Eof) {
        if (ends.size() == 0) return body;
        error(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
      }
      if (tok.type == TokenType::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Text;
        n->line = tok.line;
        n->text = tok.text;
        body.push_back(std::move(n));
        ++i_;
      } else if (tok.type == TokenType::VarBegin) {
        ++i_;
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Output;
        n->line = tok.line;
        n->expr = parse_expression();
        if (peek().type != TokenType::VarEnd) error("expected end of print statement '}}'");
        ++i_;
        body.push_back(std::move(n));
      } else if (tok.type == TokenType::BlockBegin) {
        const Token& kw = peek(1);
        if (kw.type != TokenType::Name) error("expected a statement name");
        for (const char* e : ends) {
          if (kw.text == e) {
            i_ += 2;
            *end = kw.text;
            return body;
          }
        }
        i_ += 2;
        body.push_back(parse_statement(kw));
      } else {
        error("unexpected token");
      }
    }
  }

  NodePtr parse_statement(const Token& kw) {
    auto n = std::make_unique<Node>();
    n->line = kw.line;
    const std::string& k = kw.text;
    std::string end;
    if (k == "if") {
      n->kind = Node::Kind::If;
      ExprPtr cond = parse_expression();
      expect_block_end();
      while (true) {
        Body b = parse_body({"elif", "else", "endif"}, &end);
        n->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
          cond = parse_expression();
          expect_block_end();
        } else if (end == "else") {
          expect_block_end();
          Body eb = parse_body({"endif"}, &end);
          n->branches.emplace_back(nullptr, std::move(eb));
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
    } else if (k == "for") {
      n->kind = Node::Kind::For;
      do {
        n->targets.push_back(expect_name());
      } while (accept_op(","));
      if (!accept_name("in")) error("expected 'in'");
      n->expr = parse_tuple_or_expression(/*allow_cond=*/false);
      if (accept_name("if")) n->cond = parse_expression();
      if (accept_name("recursive")) error("recursive loops are not supported");
      expect_block_end();
      n->body = parse_body({"else", "endfor"}, &end);
      if (end == "else") {
        expect_block_end();
        n->else_body = parse_body({"endfor"}, &end);
      }
      expect_block_end();
    } else if (k == "set") {
      std::string first = expect_name();
      n->targets.push_back(first);
      if (accept_op(".")) n->attr = expect_name();
      while (n->attr.empty() && accept_op(",")) n->targets.push_back(expect_name());
      if (accept_op("=")) {
        n->kind = Node::Kind::Set;
        n->expr = parse_tuple_or_expression(true);
        expect_block_end();
      } else {
        if (n->targets.size() != 1 || !n->attr.empty()) error("expected '='");
        n->kind = Node::Kind::SetBlock;
        if (is_op("|")) n->filter = parse_filter_chain(nullptr);
        expect_block_end();
        n->body = parse_body({"endset"}, &end);
        expect_block_end();
      }
    } else if (k == "macro") {
      n->kind = Node::Kind::Macro;
      n->name = expect_name();
      parse_params(n.get());
      expect_block_end();
      n->body = parse_body({"endmacro"}, &end);
      if (peek().type == TokenType::Name) ++i_;  // {% endmacro name %}
      expect_block_end();
    } else if (k == "call") {
      n->kind = Node::Kind::CallBlock;
      if (is_op("(")) parse_params(n.get());
      n->expr = parse_expression();
      if (n->expr->kind != Expr::Kind::Call) error("expected a call in {% call %}");
      expect_block_end();
      n->body = parse_body({"endcall"}, &end);
      expect_block_end();
    } else if (k == "filter") {
      n->kind = Node::Kind::FilterBlock;
      n->filter = parse_filter_chain(nullptr, /*leading_pipe=*/false);
      expect_block_end();
      n->body = parse_body({"endfilter"}, &end);
      expect_block_end();
    } else if (k == "break" || k == "continue") {
      n->kind = k == "break" ? Node::Kind::Break : Node::Kind::Continue;
      expect_block_end();
    } else if (k == "generation") {
      n->kind = Node::Kind::Scope;
      expect_block_end();
      n->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
    } else {
      error("unknown statement '" + k + "'");
    }
    return n;
  }

  void parse_params(Node* n) {
    expect_op("(");
    while (!accept_op(")")) {
      n->targets.push_back(expect_name());
      n->defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
      if (!is_op(")")) expect_op(",");
    }
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
  ExprPtr parse_tuple_or_expression(bool allow_cond) {
    ExprPtr first = allow_cond ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::Tuple);
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().type == TokenType::BlockEnd) break;
      t->args.push_back(allow_cond ? parse_expression() : parse_or());
    }
    return t;
  }

  ExprPtr parse_expression() {
    DepthGuard g(depth_, peek().line);
    ExprPtr e = parse_or();
    while (is_name("if")) {
      ++i_;
      auto c = make(Expr::Kind::Cond);
      c->args.push_back(parse_or());  // the condition
      c->args.push_back(std::move(e));
      c->args.push_back(accept_name("else") ? parse_expression() : nullptr);
      e = finish(std::move(c));
    }
    return e;
  }

  ExprPtr binary_node(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r) {
    auto e = make(kind);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return finish(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (accept_name("or")) l = binary_node(Expr::Kind::Or, "or", std::move(l), parse_and());
    return l;
  }
  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (accept_name("and")) l = binary_node(Expr::Kind::And, "and", std::move(l), parse_not());
    return l;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      ++i_;
      DepthGuard g(depth_, peek().line);
      auto e = make(Expr::Kind::Not);
      e->args.push_back(parse_not());
      return finish(std::move(e));
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (peek().type == TokenType::Op &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
        op = next().text;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        i_ += 2;
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::Compare);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? finish(std::move(cmp)) : std::move(first);
  }
  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      l = binary_node(Expr::Kind::Binary, op, std::move(l), parse_concat());
    }
    return l;
  }
  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (accept_op("~")) l = binary_node(Expr::Kind::Binary, "~", std::move(l), parse_math2());
    return l;
  }
  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      l = binary_node(Expr::Kind::Binary, op, std::move(l), parse_pow());
    }
    return l;
  }
  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (accept_op("**")) l = binary_node(Expr::Kind::Binary, "**", std::move(l), parse_unary(true));
    return l;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard g(depth_, peek().line);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make(Expr::Kind::Unary);
      e->name = next().text;
      e->args.push_back(parse_unary(false));
      e = finish(std::move(e));
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filters_and_tests(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    auto e = make(Expr::Kind::Literal);
    switch (t.type) {
      case TokenType::Name: {
        ++i_;
        const std::string& n = t.text;
        if (n == "true" || n == "True") e->literal = Value(true);
        else if (n == "false" || n == "False") e->literal = Value(false);
        else if (n == "none" || n == "None") e->literal = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = n;
        }
        return e;
      }
      case TokenType::String: {
        std::string s;
        while (peek().type == TokenType::String) s += next().text;  // adjacent literals concatenate
        e->literal = Value(std::move(s));
        return e;
      }
      case TokenType::Int: e->literal = Value(next().int_value); return e;
      case TokenType::Float: e->literal = Value(next().float_value); return e;
      case TokenType::Op:
        if (accept_op("(")) {
          if (accept_op(")")) {
            e->kind = Expr::Kind::Tuple;
            return e;
          }
          ExprPtr inner = parse_expression();
          if (accept_op(")")) return inner;
          e->kind = Expr::Kind::Tuple;
          e->args.push_back(std::move(inner));
          while (accept_op(",")) {
            if (is_op(")")) break;
            e->args.push_back(parse_expression());
          }
          expect_op(")");
          return finish(std::move(e));
        }
        if (accept_op("[")) {
          e->kind = Expr::Kind::List;
          while (!accept_op("]")) {
            e->args.push_back(parse_expression());
            if (!is_op("]")) expect_op(",");
          }
          return finish(std::move(e));
        }
        if (accept_op("{")) {
          e->kind = Expr::Kind::Dict;
          while (!accept_op("}")) {
            e->args.push_back(parse_expression());
            expect_op(":");
            e->args.push_back(parse_expression());
            if (!is_op("}")) expect_op(",");
          }
          return finish(std::move(e));
        }
        break;
      default: break;
    }
    error("unexpected token in expression" + (t.text.empty() ? std::string() : " '" + t.text + "'"));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (accept_op(".")) {
        auto a = make(Expr::Kind::Attr);
        if (peek().type == TokenType::Int) {  // x.0 is x[0]
          a->kind = Expr::Kind::Item;
          auto idx = make(Expr::Kind::Literal);
          idx->literal = Value(next().int_value);
          a->args.push_back(std::move(idx));
        } else {
          a->name = expect_name();
        }
        a->target = std::move(e);
        e = finish(std::move(a));
      } else if (accept_op("[")) {
        e = finish(parse_subscript(std::move(e)));
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::Call);
        c->target = std::move(e);
        parse_call_args(c.get());
        e = finish(std::move(c));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    std::vector<ExprPtr> parts(1);
    bool slice = false;
    if (!is_op(":")) parts[0] = parse_expression();
    while (accept_op(":")) {
      slice = true;
      parts.emplace_back();
      if (!is_op(":") && !is_op("]")) parts.back() = parse_expression();
    }
    expect_op("]");
    auto e = make(slice ? Expr::Kind::Slice : Expr::Kind::Item);
    e->target = std::move(target);
    if (slice) {
      parts.resize(3);
      if (parts.size() > 3) error("invalid slice");
    }
    e->args = std::move(parts);
    return e;
  }

  void parse_call_args(Expr* call) {
    expect_op("(");
    while (!accept_op(")")) {
      if (peek().type == TokenType::Name && is_op("=", 1)) {
        std::string name = next().text;
        ++i_;
        call->kwargs.emplace_back(std::move(name), parse_expression());
      } else {
        call->args.push_back(parse_expression());
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_filter_chain(ExprPtr target, bool leading_pipe = true) {
    bool first = true;
    while ((first && !leading_pipe) || accept_op("|")) {
      first = false;
      auto f = make(Expr::Kind::Filter);
      f->name = expect_name();
      while (accept_op(".")) f->name += "." + expect_name();
      if (is_op("(")) parse_call_args(f.get());
      f->target = std::move(target);
      target = finish(std::move(f));
    }
    return target;
  }

  ExprPtr parse_filters_and_tests(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filter_chain(std::move(e));
      } else if (is_name("is")) {
        ++i_;
        auto t = make(Expr::Kind::Test);
        t->negated = accept_name("not");
        t->name = expect_name();
        t->target = std::move(e);
        if (is_op("(")) {
          parse_call_args(t.get());
        } else if (peek().type == TokenType::String || peek().type == TokenType::Int ||
                   peek().type == TokenType::Float || is_op("[") || is_op("{") ||
                   (peek().type == TokenType::Name && !is_name("else") && !is_name("or") && !is_name("and") &&
                    !is_name("if") && !is_name("in") && !is_name("not") && !is_name("is"))) {
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = finish(std::move(t));
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace stride::jinja

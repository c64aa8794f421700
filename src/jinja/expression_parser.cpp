// Expressions: Jinja2's precedence (condexpr > or > and > not > compare >
// + - > ~ > * / // % > ** > unary), then postfix, filters and tests.
#include "jinja/parser_internal.h"

namespace stride::jinja {

ExprPtr ExpressionParser::parse_tuple_or_expression(bool allow_cond) {
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

ExprPtr ExpressionParser::parse_expression() {
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

ExprPtr ExpressionParser::binary_node(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r) {
  auto e = make(kind);
  e->name = std::move(op);
  e->args.push_back(std::move(l));
  e->args.push_back(std::move(r));
  return finish(std::move(e));
}

ExprPtr ExpressionParser::parse_or() {
  ExprPtr l = parse_and();
  while (accept_name("or")) l = binary_node(Expr::Kind::Or, "or", std::move(l), parse_and());
  return l;
}

ExprPtr ExpressionParser::parse_and() {
  ExprPtr l = parse_not();
  while (accept_name("and")) l = binary_node(Expr::Kind::And, "and", std::move(l), parse_not());
  return l;
}

ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    ++i_;
    DepthGuard g(depth_, peek().line);
    auto e = make(Expr::Kind::Not);
    e->args.push_back(parse_not());
    return finish(std::move(e));
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
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

ExprPtr ExpressionParser::parse_math1() {
  ExprPtr l = parse_concat();
  while (is_op("+") || is_op("-")) {
    std::string op = next().text;
    l = binary_node(Expr::Kind::Binary, op, std::move(l), parse_concat());
  }
  return l;
}

ExprPtr ExpressionParser::parse_concat() {
  ExprPtr l = parse_math2();
  while (accept_op("~")) l = binary_node(Expr::Kind::Binary, "~", std::move(l), parse_math2());
  return l;
}

ExprPtr ExpressionParser::parse_math2() {
  ExprPtr l = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = next().text;
    l = binary_node(Expr::Kind::Binary, op, std::move(l), parse_pow());
  }
  return l;
}

ExprPtr ExpressionParser::parse_pow() {
  ExprPtr l = parse_unary(true);
  while (accept_op("**")) l = binary_node(Expr::Kind::Binary, "**", std::move(l), parse_unary(true));
  return l;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
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

ExprPtr ExpressionParser::parse_primary() {
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

ExprPtr ExpressionParser::parse_postfix(ExprPtr e) {
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

ExprPtr ExpressionParser::parse_subscript(ExprPtr target) {
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

void ExpressionParser::parse_call_args(Expr* call) {
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

ExprPtr ExpressionParser::parse_filter_chain(ExprPtr target, bool leading_pipe) {
  bool first = true;
  while ((first && !leading_pipe) || accept_op("|")) {
    first = false;
    auto f = make(Expr::Kind::Filter);
    f->name = expect_name();
    while (accept_op(".")) {
      f->name += '.';
      f->name += expect_name();
    }
    if (is_op("(")) parse_call_args(f.get());
    f->target = std::move(target);
    target = finish(std::move(f));
  }
  return target;
}

ExprPtr ExpressionParser::parse_filters_and_tests(ExprPtr e) {
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

}  // namespace stride::jinja

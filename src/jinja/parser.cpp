// Statements: text, {{ }}, and the {% %} tags chat templates use.
#include "jinja/parser_internal.h"

namespace stride::jinja {

Body Parser::parse_template() {
  std::string end;
  return parse_body({}, &end);
}

Body Parser::parse_body(std::initializer_list<const char*> ends, std::string* end) {
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

NodePtr Parser::parse_statement(const Token& kw) {
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

void Parser::parse_params(Node* n) {
  expect_op("(");
  while (!accept_op(")")) {
    n->targets.push_back(expect_name());
    n->defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
    if (!is_op(")")) expect_op(",");
  }
}

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace stride::jinja

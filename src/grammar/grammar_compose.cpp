#include "grammar/grammar_compose.h"

#include "grammar/gbnf_text.h"

namespace stride::grammar {

namespace {

using Kind = GrammarNode::Kind;

// Parentheses only where the grammar needs them, so that the text nests no
// deeper than the one it was parsed from.
class Printer {
 public:
  explicit Printer(const std::string& prefix) : prefix_(prefix) {}

  std::string node(const GrammarNode& n, Kind parent) const {
    switch (n.kind) {
      case Kind::Literal: return gbnf_literal(n.bytes);
      case Kind::CharClass: return gbnf_class(n.chars);
      case Kind::RuleRef: return prefix_ + n.rule;
      case Kind::Sequence: {
        if (n.children.empty()) return "\"\"";
        const std::string s = join(n, " ", Kind::Sequence);
        return parent == Kind::Repeat ? "( " + s + " )" : s;
      }
      case Kind::Choice: {
        const std::string s = join(n, " | ", Kind::Choice);
        return parent == Kind::Choice ? s : "( " + s + " )";
      }
      case Kind::Repeat: {
        std::string s = node(n.children.at(0), Kind::Repeat);
        if (n.children[0].kind == Kind::Repeat) s = "( " + s + " )";  // one postfix per item
        return s + "{" + std::to_string(n.min) + "," + (n.max < 0 ? "" : std::to_string(n.max)) + "}";
      }
    }
    return "\"\"";
  }

 private:
  std::string join(const GrammarNode& n, const char* sep, Kind self) const {
    std::string s;
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (i) s += sep;
      s += node(n.children[i], self);
    }
    return s;
  }

  const std::string& prefix_;
};

}  // namespace

std::string gbnf_of(const GrammarAst& ast, const std::string& prefix) {
  const Printer p(prefix);
  std::string out;
  for (size_t r = 0; r < ast.names.size(); ++r) {
    // A rule body is a choice at the top level: no parentheses needed.
    const GrammarNode& body = ast.bodies[r];
    std::string text = body.kind == Kind::Choice ? p.node(body, Kind::Choice) : p.node(body, Kind::Literal);
    out += prefix + ast.names[r] + " ::= " + text + "\n";
  }
  return out;
}

Expected<std::string> gbnf_prefixed(std::string_view text, const std::string& prefix, const GrammarLimits& limits) {
  STRIDE_ASSIGN_OR_RETURN(GrammarAst ast, parse_gbnf(text, limits));
  return gbnf_of(ast, prefix);
}

}  // namespace stride::grammar

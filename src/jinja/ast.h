#pragma once
// The parsed template: expressions and statements. Plain data; the renderer
// (renderer.cpp, evaluator.cpp) gives it meaning.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace stride::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // literal
    Name,      // name
    Attr,      // target.name
    Item,      // target[args[0]]
    Slice,     // target[args[0]:args[1]:args[2]] (any may be null)
    Call,      // target(args, kwargs)
    Filter,    // target | name(args, kwargs); target null inside {% filter %}
    Test,      // target is [not] name(args)
    Unary,     // name ("-", "+") args[0]
    Binary,    // args[0] name args[1]: + - * / // % ** ~
    Compare,   // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    And,
    Or,
    Not,
    Cond,      // args[1] if args[0] else args[2] (args[2] may be null)
    List,
    Tuple,
    Dict,      // args: key, value, key, value, ...
  };
  Kind kind = Kind::Literal;
  size_t line = 0;
  int depth = 1;  // height of this subtree, bounded by the parser
  Value literal;
  std::string name;
  bool negated = false;
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // branches (cond null: else)
    For,          // for targets in expr [if cond] body [else else_body]
    Set,          // set targets = expr, or set targets[0].attr = expr
    SetBlock,     // set targets[0] [| filter] body endset
    Macro,        // macro name(params=defaults) body
    CallBlock,    // call[(params)] expr body endcall
    FilterBlock,  // filter filter body endfilter
    Break,
    Continue,
    Scope,        // body rendered as is ({% generation %})
  };
  Kind kind = Kind::Text;
  size_t line = 0;
  std::string text;
  std::string name;
  std::string attr;
  ExprPtr expr;
  ExprPtr cond;
  ExprPtr filter;  // a Filter chain whose innermost target is null
  std::vector<std::string> targets;
  std::vector<ExprPtr> defaults;  // Macro/CallBlock: one per target, null when none
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
};

}  // namespace stride::jinja

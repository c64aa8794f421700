#pragma once
// Renders a parsed template: statements (renderer.cpp) and expressions
// (evaluator.cpp) over a chain of scopes, writing into a stack of outputs.
// Limits from RenderOptions are checked as the render goes.
#include <string>
#include <unordered_map>
#include <vector>

#include "jinja/ast.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace stride::jinja {

class Renderer {
 public:
  Renderer(const RenderOptions& options, const Value& context);
  Rendered run(const Body& body);

  Value eval(const Expr& e);
  const RenderOptions& options() const { return options_; }
  // Fails (ErrorKind::Limit) once the render has built more than max_iterations items.
  void count_items(size_t n);
  // Fails (ErrorKind::Limit) for a string longer than max_output_bytes.
  // Also counts the bytes towards max_built_bytes.
  void check_size(size_t bytes);

 private:
  // A scope: a for loop, a macro call, a caller body; `parent` is where names
  // not found here are looked up.
  struct Frame {
    std::unordered_map<std::string, Value> vars;
    Frame* parent = nullptr;
  };
  enum class Flow { Normal, Break, Continue };

  Flow exec(const Body& body);
  Flow exec_node(const Node& n);
  void exec_for(const Node& n, Flow* flow);
  void exec_set(const Node& n);
  Str capture(const Body& body, Frame* frame);
  Value call_macro(const Node& macro, CallArgs& args, const Value& caller);
  void emit(const Str& s);

  Value lookup(const std::string& name) const;
  Value eval_call(const Expr& e);
  Value eval_filter(const Expr& e, const Value* block_input);
  Value eval_binary(const std::string& op, const Value& l, const Value& r);
  Value eval_compare(const Expr& e);
  CallArgs eval_args(const Expr& e);
  void assign(const std::vector<std::string>& targets, const Value& v, Frame* frame);

  const RenderOptions& options_;
  Frame root_;
  Frame* current_ = &root_;
  std::vector<Str> outputs_;
  size_t items_ = 0;
  size_t built_bytes_ = 0;
  int call_depth_ = 0;
};

}  // namespace stride::jinja

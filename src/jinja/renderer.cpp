#include "jinja/renderer.h"

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/value_ops.h"

namespace stride::jinja {

Renderer::Renderer(const RenderOptions& options, const Value& context) : options_(options) {
  if (context.is(ValueKind::Dict)) {
    for (const auto& [k, v] : context.as_dict().items) root_.vars[k] = v;
  }
}

Rendered Renderer::run(const Body& body) {
  outputs_.emplace_back();
  const Flow f = exec(body);
  if (f != Flow::Normal) fail("'break' or 'continue' outside a loop");
  Rendered r;
  r.text = std::move(outputs_.back().text);
  for (const Span& s : outputs_.back().literal) r.literal.push_back(s);
  outputs_.pop_back();
  return r;
}

void Renderer::count_items(size_t n) {
  items_ += n;
  if (items_ > options_.max_iterations) {
    throw JinjaError(ErrorKind::Limit, "template exceeded " + std::to_string(options_.max_iterations) +
                                           " loop iterations");
  }
}

void Renderer::check_size(size_t bytes) {
  built_bytes_ += bytes;
  if (built_bytes_ > options_.max_built_bytes) {
    throw JinjaError(ErrorKind::Limit, "template built more than " + std::to_string(options_.max_built_bytes) +
                                           " bytes of strings");
  }
  if (bytes > options_.max_output_bytes) {
    throw JinjaError(ErrorKind::Limit, "template output exceeded " + std::to_string(options_.max_output_bytes) +
                                           " bytes");
  }
}

void Renderer::emit(const Str& s) {
  Str& out = outputs_.back();
  check_size(s.text.size());
  if (out.text.size() + s.text.size() > options_.max_output_bytes) {
    throw JinjaError(ErrorKind::Limit, "template output exceeded " + std::to_string(options_.max_output_bytes) +
                                           " bytes");
  }
  out.append(s);
}

Value Renderer::lookup(const std::string& name) const {
  for (const Frame* f = current_; f; f = f->parent) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  return Value::undefined(name);
}

Renderer::Flow Renderer::exec(const Body& body) {
  for (const NodePtr& n : body) {
    const Flow f = exec_node(*n);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Str Renderer::capture(const Body& body, Frame* frame) {
  Frame* saved = current_;
  current_ = frame;
  outputs_.emplace_back();
  struct Restore {
    Renderer* r;
    Frame* saved;
    ~Restore() { r->current_ = saved; }
  } restore{this, saved};
  const Flow f = exec(body);
  if (f != Flow::Normal) fail("'break' or 'continue' outside a loop");
  Str s = std::move(outputs_.back());
  outputs_.pop_back();
  return s;
}

Renderer::Flow Renderer::exec_node(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Text: emit(Str(n.text)); return Flow::Normal;
    case Node::Kind::Output: emit(to_str(eval(*n.expr))); return Flow::Normal;
    case Node::Kind::If:
      for (const auto& [cond, body] : n.branches) {
        if (!cond || truthy(eval(*cond))) return exec(body);
      }
      return Flow::Normal;
    case Node::Kind::For: {
      Flow f = Flow::Normal;
      exec_for(n, &f);
      return Flow::Normal;
    }
    case Node::Kind::Set: exec_set(n); return Flow::Normal;
    case Node::Kind::SetBlock: {
      Value v(capture(n.body, current_));
      if (n.filter) v = eval_filter(*n.filter, &v);
      current_->vars[n.targets[0]] = v;
      return Flow::Normal;
    }
    case Node::Kind::Macro: {
      const Node* macro = &n;
      current_->vars[n.name] = Value::function(n.name, [this, macro](CallArgs& args) {
        return call_macro(*macro, args, Value::undefined("caller"));
      });
      return Flow::Normal;
    }
    case Node::Kind::CallBlock: {
      const Node* block = &n;
      Frame* site = current_;
      Value caller = Value::function("caller", [this, block, site](CallArgs& args) {
        Frame frame;
        frame.parent = site;
        for (size_t i = 0; i < block->targets.size(); ++i) {
          const Value* a = args.get(i, block->targets[i].c_str());
          frame.vars[block->targets[i]] = a ? *a : block->defaults[i] ? eval(*block->defaults[i]) : Value::undefined();
        }
        return Value(capture(block->body, &frame));
      });
      const Expr& call = *n.expr;
      Value callee = eval(*call.target);
      CallArgs args = eval_args(call);
      if (!callee.is(ValueKind::Function)) fail("'" + call.target->name + "' is not callable");
      // Macros take the caller as a named argument.
      args.named.emplace_back("caller", caller);
      emit(to_str(callee.as_function().call(args)));
      return Flow::Normal;
    }
    case Node::Kind::FilterBlock: {
      Value v(capture(n.body, current_));
      emit(to_str(eval_filter(*n.filter, &v)));
      return Flow::Normal;
    }
    case Node::Kind::Break: return Flow::Break;
    case Node::Kind::Continue: return Flow::Continue;
    case Node::Kind::Scope: return exec(n.body);
  }
  return Flow::Normal;
}

void Renderer::assign(const std::vector<std::string>& targets, const Value& v, Frame* frame) {
  if (targets.size() == 1) {
    frame->vars[targets[0]] = v;
    return;
  }
  std::vector<Value> items = iterate(v);
  if (items.size() != targets.size()) {
    fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()));
  }
  for (size_t i = 0; i < targets.size(); ++i) frame->vars[targets[i]] = items[i];
}

void Renderer::exec_set(const Node& n) {
  Value v = eval(*n.expr);
  if (n.attr.empty()) {
    assign(n.targets, v, current_);
    return;
  }
  Value ns = lookup(n.targets[0]);
  if (!ns.is(ValueKind::Namespace)) fail("cannot assign attribute on non-namespace object");
  ns.as_namespace().attrs.set(n.attr, std::move(v));
}

static Value loop_object(const std::vector<Value>& items, size_t i, const Value& cycle) {
  DictData d;
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  d.set("index", Value(k + 1));
  d.set("index0", Value(k));
  d.set("revindex", Value(n - k));
  d.set("revindex0", Value(n - k - 1));
  d.set("first", Value(k == 0));
  d.set("last", Value(k == n - 1));
  d.set("length", Value(n));
  d.set("depth", Value(1));
  d.set("depth0", Value(0));
  d.set("previtem", i > 0 ? items[i - 1] : Value::undefined("previtem"));
  d.set("nextitem", k + 1 < n ? items[i + 1] : Value::undefined("nextitem"));
  d.set("cycle", cycle);
  return Value::dict(std::move(d));
}

void Renderer::exec_for(const Node& n, Flow* flow) {
  Value seq = eval(*n.expr);
  std::vector<Value> all = iterate(seq);
  Frame frame;
  frame.parent = current_;
  Frame* saved = current_;
  current_ = &frame;
  struct Restore {
    Renderer* r;
    Frame* saved;
    ~Restore() { r->current_ = saved; }
  } restore{this, saved};

  std::vector<Value> items;
  if (n.cond) {  // the filter runs first: loop.length counts the kept items
    for (const Value& v : all) {
      count_items(1);
      assign(n.targets, v, &frame);
      if (truthy(eval(*n.cond))) items.push_back(v);
    }
  } else {
    items = std::move(all);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    count_items(1);
    const size_t index = i;
    Value cycle = Value::function("cycle", [index](CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[index % args.positional.size()];
    });
    frame.vars.clear();
    frame.vars["loop"] = loop_object(items, i, cycle);
    assign(n.targets, items[i], &frame);
    const Flow f = exec(n.body);
    if (f == Flow::Break) break;
  }
  if (items.empty() && !n.else_body.empty()) {
    frame.vars.clear();
    *flow = exec(n.else_body);
  }
}

Value Renderer::call_macro(const Node& macro, CallArgs& args, const Value& caller) {
  if (++call_depth_ > options_.max_call_depth) {
    --call_depth_;
    throw JinjaError(ErrorKind::Limit, "macro calls nested deeper than " + std::to_string(options_.max_call_depth));
  }
  struct Depth {
    int& d;
    ~Depth() { --d; }
  } depth{call_depth_};
  Frame frame;
  frame.parent = &root_;
  Value caller_arg = caller;
  for (auto it = args.named.begin(); it != args.named.end();) {
    if (it->first == "caller") {
      caller_arg = it->second;
      it = args.named.erase(it);
    } else {
      ++it;
    }
  }
  frame.vars["caller"] = caller_arg;
  Frame* saved = current_;
  current_ = &frame;  // defaults see the earlier parameters
  struct Restore {
    Renderer* r;
    Frame* saved;
    ~Restore() { r->current_ = saved; }
  } restore{this, saved};
  std::vector<Value> extra;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < macro.targets.size()) frame.vars[macro.targets[i]] = args.positional[i];
    else extra.push_back(args.positional[i]);
  }
  DictData extra_named;
  for (auto& [name, v] : args.named) {
    bool known = false;
    for (const std::string& t : macro.targets) known |= t == name;
    if (known) frame.vars[name] = v;
    else extra_named.set(name, v);
  }
  for (size_t i = 0; i < macro.targets.size(); ++i) {
    if (frame.vars.count(macro.targets[i])) continue;
    frame.vars[macro.targets[i]] = macro.defaults[i] ? eval(*macro.defaults[i]) : Value::undefined(macro.targets[i]);
  }
  frame.vars["varargs"] = Value::list(std::move(extra), /*tuple=*/true);
  frame.vars["kwargs"] = Value::dict(std::move(extra_named));
  return Value(capture(macro.body, &frame));
}

}  // namespace stride::jinja

// Expressions: Python's operator semantics on template values.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& l, const Value& r) {
  fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
}

void require_defined(const Value& v) {
  if (v.is(ValueKind::Undefined)) fail("'" + v.undefined_name() + "' is undefined");
}

int64_t int_of(const Value& v) { return v.is(ValueKind::Bool) ? v.as_bool() : v.as_int(); }

int64_t checked(bool overflow, int64_t v) {
  if (overflow) fail("integer overflow");
  return v;
}

double floor_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

Value Renderer::eval_binary(const std::string& op, const Value& l, const Value& r) {
  if (op == "~") {
    Str s = to_str(l);
    s.append(to_str(r));
    check_size(s.text.size());
    return Value(std::move(s));
  }
  require_defined(l);
  require_defined(r);
  const bool ints = (l.is(ValueKind::Int) || l.is(ValueKind::Bool)) && (r.is(ValueKind::Int) || r.is(ValueKind::Bool));
  const bool nums = is_number(l) && is_number(r);
  const char c = op[0];
  if (op == "+") {
    if (ints) {
      int64_t out;
      const bool overflow = __builtin_add_overflow(int_of(l), int_of(r), &out);
      return Value(checked(overflow, out));
    }
    if (nums) return Value(as_number(l) + as_number(r));
    if (l.is(ValueKind::String) && r.is(ValueKind::String)) {
      // Markup + str escapes the str (markupsafe); the result is Markup.
      auto side = [&](const Value& v, bool other_markup) {
        if (!other_markup || v.as_str().markup) return v.as_str();
        Str e = Str::derived(html_escape(v.as_str().text), v.as_str().any_literal());
        return e;
      };
      const bool markup = l.as_str().markup || r.as_str().markup;
      Str s = side(l, markup);
      s.append(side(r, markup));
      s.markup = markup;
      check_size(s.text.size());
      return Value(std::move(s));
    }
    if (l.is(ValueKind::List) && r.is(ValueKind::List)) {
      std::vector<Value> items = l.as_list().items;
      items.insert(items.end(), r.as_list().items.begin(), r.as_list().items.end());
      count_items(items.size());
      return Value::list(std::move(items));
    }
    if (l.is(ValueKind::String) || r.is(ValueKind::String)) {
      fail(std::string("can only concatenate str (not \"") + type_name((l.is(ValueKind::String) ? r : l)) + "\") to str");
    }
    unsupported(op, l, r);
  }
  if (op == "-") {
    if (ints) {
      int64_t out;
      const bool overflow = __builtin_sub_overflow(int_of(l), int_of(r), &out);
      return Value(checked(overflow, out));
    }
    if (nums) return Value(as_number(l) - as_number(r));
    unsupported(op, l, r);
  }
  if (op == "*") {
    if (ints) {
      int64_t out;
      const bool overflow = __builtin_mul_overflow(int_of(l), int_of(r), &out);
      return Value(checked(overflow, out));
    }
    if (nums) return Value(as_number(l) * as_number(r));
    const Value* seq = (l.is(ValueKind::String) || l.is(ValueKind::List)) ? &l : (r.is(ValueKind::String) || r.is(ValueKind::List)) ? &r : nullptr;
    const Value* count = seq == &l ? &r : &l;
    if (seq && (count->is(ValueKind::Int) || count->is(ValueKind::Bool))) {
      const int64_t n = std::max<int64_t>(0, int_of(*count));
      const size_t unit = seq->is(ValueKind::String) ? seq->as_str().text.size() : seq->as_list().items.size();
      if (unit != 0 && static_cast<size_t>(n) > (size_t{1} << 40) / unit) throw JinjaError(ErrorKind::Limit, "repetition too large");
      if (seq->is(ValueKind::String)) {
        check_size(seq->as_str().text.size() * static_cast<size_t>(n));
        Str s;
        for (int64_t i = 0; i < n; ++i) s.append(seq->as_str());
        return Value(std::move(s));
      }
      count_items(seq->as_list().items.size() * static_cast<size_t>(n));
      std::vector<Value> items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->as_list().items.begin(), seq->as_list().items.end());
      return Value::list(std::move(items), seq->as_list().tuple);
    }
    unsupported(op, l, r);
  }
  if (c == '/' || op == "%") {
    if (op == "%" && l.is(ValueKind::String)) {  // printf-style formatting: %s and %d
      std::vector<Value> args = r.is(ValueKind::List) && r.as_list().tuple ? r.as_list().items : std::vector<Value>{r};
      const Str& f = l.as_str();
      Str out;
      size_t next = 0;
      bool tainted = f.any_literal();
      for (size_t i = 0; i < f.text.size(); ++i) {
        if (f.text[i] != '%' || i + 1 >= f.text.size()) {
          out.append(std::string_view(&f.text[i], 1));
          continue;
        }
        if (f.text[i + 1] == '%') {
          out.append("%");
          ++i;
          continue;
        }
        // %[flags][width][.precision]conversion
        size_t j = i + 1;
        std::string spec = "%";
        while (j < f.text.size() && std::strchr("-+ 0#", f.text[j])) spec += f.text[j++];
        while (j < f.text.size() && std::isdigit(static_cast<unsigned char>(f.text[j])) && spec.size() < 8) spec += f.text[j++];
        if (j < f.text.size() && f.text[j] == '.') {
          spec += f.text[j++];
          while (j < f.text.size() && std::isdigit(static_cast<unsigned char>(f.text[j])) && spec.size() < 12) spec += f.text[j++];
        }
        if (j >= f.text.size()) fail("incomplete format");
        const char k = f.text[j];
        i = j;
        if (next >= args.size()) fail("not enough arguments for format string");
        const Value& a = args[next++];
        tainted |= a.is(ValueKind::String) && a.as_str().any_literal();
        char buf[512];
        if (k == 's' || k == 'r') {
          const std::string text = k == 's' ? to_str(a).text : repr(a);
          if (spec == "%") {
            out.append(text);
          } else {  // width and precision count code points, as Python does
            const bool left = spec.find('-') != std::string::npos;
            const size_t dot = spec.find('.');
            size_t width = 0, precision = std::string::npos;
            for (size_t p = 1; p < (dot == std::string::npos ? spec.size() : dot); ++p) {
              if (std::isdigit(static_cast<unsigned char>(spec[p]))) width = width * 10 + (spec[p] - '0');
            }
            if (dot != std::string::npos) precision = std::strtoul(spec.c_str() + dot + 1, nullptr, 10);
            const std::vector<size_t> off = utf8_offsets(text);
            const size_t n = std::min(off.size() - 1, precision);
            const std::string cut = text.substr(0, off[n]);
            const std::string pad(width > n ? width - n : 0, ' ');
            out.append(left ? cut + pad : pad + cut);
          }
        } else if (k == 'd' || k == 'i') {
          std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), static_cast<long long>(as_number(a)));
          out.append(buf);
        } else if (k == 'f' || k == 'F' || k == 'e' || k == 'E' || k == 'g' || k == 'G') {
          std::snprintf(buf, sizeof buf, (spec + k).c_str(), as_number(a));
          out.append(buf);
        } else if (k == 'x' || k == 'X' || k == 'o') {
          std::snprintf(buf, sizeof buf, (spec + "ll" + k).c_str(), static_cast<long long>(as_number(a)));
          out.append(buf);
        } else {
          fail(std::string("unsupported format character '") + k + "'");
        }
      }
      if (next < args.size() && !r.is(ValueKind::Dict)) fail("not all arguments converted during string formatting");
      check_size(out.text.size());
      return Value(Str::derived(std::move(out.text), tainted));
    }
    if (!nums) unsupported(op, l, r);
    if (as_number(r) == 0) fail(op == "%" ? "integer modulo by zero" : "division by zero");
    if (op == "/") return Value(as_number(l) / as_number(r));
    if (ints) {
      const int64_t a = int_of(l), b = int_of(r);
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return op == "//" ? Value(q) : Value(m);
    }
    const double a = as_number(l), b = as_number(r);
    return op == "//" ? Value(std::floor(a / b)) : Value(floor_mod(a, b));
  }
  if (op == "**") {
    if (!nums) unsupported(op, l, r);
    if (ints && int_of(r) >= 0) {
      int64_t out = 1;
      const int64_t base = int_of(l);
      for (int64_t e = int_of(r); e > 0; --e) {
        if (__builtin_mul_overflow(out, base, &out)) fail("integer overflow");
        if (out == 0 || out == 1) break;
      }
      return Value(out);
    }
    return Value(std::pow(as_number(l), as_number(r)));
  }
  fail("unknown operator " + op);
}

static bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is(ValueKind::String)) fail("'in <string>' requires string as left operand");
      return container.as_str().text.find(item.as_str().text) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list().items) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      if (item.is(ValueKind::List) || item.is(ValueKind::Dict)) fail(std::string("unhashable type: '") + type_name(item) + "'");
      if (!(item.is(ValueKind::String) || is_number(item) || item.is(ValueKind::None))) return false;
      return container.as_dict().find(dict_key(item)) != nullptr;
    case Value::Kind::Undefined: return false;
    default: fail(std::string("argument of type '") + type_name(container) + "' is not iterable");
  }
}

Value Renderer::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1]);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") ok = values_equal(left, right);
    else if (op == "!=") ok = !values_equal(left, right);
    else if (op == "in") ok = contains(right, left);
    else if (op == "notin") ok = !contains(right, left);
    else {
      require_defined(left);
      require_defined(right);
      const int c = compare_values(left, right);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

CallArgs Renderer::eval_args(const Expr& e) {
  CallArgs args;
  for (const ExprPtr& a : e.args) args.positional.push_back(eval(*a));
  for (const auto& [name, a] : e.kwargs) args.named.emplace_back(name, eval(*a));
  return args;
}

Value Renderer::eval_call(const Expr& e) {
  Value callee = eval(*e.target);
  if (!callee.is(ValueKind::Function)) {
    if (callee.is(ValueKind::Undefined)) fail("'" + callee.undefined_name() + "' is undefined");
    fail(std::string("'") + type_name(callee) + "' object is not callable");
  }
  CallArgs args = eval_args(e);
  return callee.as_function().call(args);
}

Value Renderer::eval_filter(const Expr& e, const Value* block_input) {
  Value input;
  if (!e.target) input = block_input ? *block_input : Value::undefined();
  else if (e.target->kind == Expr::Kind::Filter && block_input) input = eval_filter(*e.target, block_input);
  else input = eval(*e.target);
  CallArgs args = eval_args(e);
  return apply_filter(*this, e.name, input, args);
}

Value Renderer::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Name: {
      Value v = lookup(e.name);
      return v.is(ValueKind::Undefined) ? global_value(*this, e.name) : v;
    }
    case Expr::Kind::Attr: return get_attribute(*this, eval(*e.target), e.name);
    case Expr::Kind::Item: return get_item(*this, eval(*e.target), eval(*e.args[0]));
    case Expr::Kind::Slice: {
      Value obj = eval(*e.target);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.args[i] ? eval(*e.args[i]) : Value::none();
      return slice_value(*this, obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::Call: return eval_call(e);
    case Expr::Kind::Filter: return eval_filter(e, nullptr);
    case Expr::Kind::Test: {
      Value v = eval(*e.target);
      CallArgs args = eval_args(e);
      const bool r = apply_test(*this, e.name, v, args);
      return Value(e.negated ? !r : r);
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.args[0]);
      require_defined(v);
      if (!is_number(v)) fail(std::string("bad operand type for unary ") + e.name + ": '" + type_name(v) + "'");
      if (e.name == "+") return v.is(ValueKind::Bool) ? Value(int_of(v)) : v;
      if (v.is(ValueKind::Float)) return Value(-v.as_float());
      return Value(checked(int_of(v) == INT64_MIN, -int_of(v)));
    }
    case Expr::Kind::Binary: return eval_binary(e.name, eval(*e.args[0]), eval(*e.args[1]));
    case Expr::Kind::Compare: return eval_compare(e);
    case Expr::Kind::And: {
      Value l = eval(*e.args[0]);
      return truthy(l) ? eval(*e.args[1]) : l;
    }
    case Expr::Kind::Or: {
      Value l = eval(*e.args[0]);
      return truthy(l) ? l : eval(*e.args[1]);
    }
    case Expr::Kind::Not: return Value(!truthy(eval(*e.args[0])));
    case Expr::Kind::Cond:
      if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined();
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<Value> items;
      for (const ExprPtr& a : e.args) items.push_back(eval(*a));
      count_items(items.size());
      return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      DictData d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        d.set(dict_key(k), eval(*e.args[i + 1]));
      }
      count_items(d.items.size());
      return Value::dict(std::move(d));
    }
  }
  fail("unknown expression");
}

}  // namespace stride::jinja

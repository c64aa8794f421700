// Jinja2's tests (`x is defined`, `x is string`, ...).
#include <cctype>
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {

bool apply_test(Renderer& r, const std::string& name, const Value& v, CallArgs& args) {
  using K = Value::Kind;
  const Value* arg = args.get(0, "other");
  auto need_arg = [&]() -> const Value& {
    if (!arg) fail("test '" + name + "' needs an argument");
    return *arg;
  };
  if (name == "defined") return !v.is(ValueKind::Undefined);
  if (name == "undefined") return v.is(ValueKind::Undefined);
  if (name == "none") return v.is(ValueKind::None);
  if (name == "string") return v.is(ValueKind::String);
  if (name == "mapping") return v.is(ValueKind::Dict);
  if (name == "iterable") return v.is(ValueKind::List) || v.is(ValueKind::Dict) || v.is(ValueKind::String) || v.is(ValueKind::Undefined);
  if (name == "sequence") return v.is(ValueKind::List) || v.is(ValueKind::Dict) || v.is(ValueKind::String) || v.is(ValueKind::Undefined);
  if (name == "number") return is_number(v);
  if (name == "integer") return v.is(ValueKind::Int);
  if (name == "float") return v.is(ValueKind::Float);
  if (name == "boolean") return v.is(ValueKind::Bool);
  if (name == "true") return v.is(ValueKind::Bool) && v.as_bool();
  if (name == "false") return v.is(ValueKind::Bool) && !v.as_bool();
  if (name == "callable") return v.is(ValueKind::Function);
  if (name == "odd" || name == "even") {  // value % 2 == 1 / == 0, on any number
    if (!is_number(v)) fail(std::string("odd/even need a number, not ") + type_name(v));
    double m = std::fmod(as_number(v), 2.0);
    if (m < 0) m += 2.0;
    return name == "odd" ? m == 1.0 : m == 0.0;
  }
  if (name == "divisibleby") {
    const Value& d = need_arg();
    if (!v.is(ValueKind::Int) || !d.is(ValueKind::Int) || d.as_int() == 0) fail("divisibleby needs non-zero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, need_arg());
  if (name == "ne" || name == "!=") return !values_equal(v, need_arg());
  if (name == "lt" || name == "lessthan" || name == "<") return compare_values(v, need_arg()) < 0;
  if (name == "le" || name == "<=") return compare_values(v, need_arg()) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare_values(v, need_arg()) > 0;
  if (name == "ge" || name == ">=") return compare_values(v, need_arg()) >= 0;
  if (name == "in") {
    const Value& c = need_arg();
    if (c.is(ValueKind::String)) return v.is(ValueKind::String) && c.as_str().text.find(v.as_str().text) != std::string::npos;
    if (c.is(ValueKind::Dict)) return (v.is(ValueKind::String) || is_number(v) || v.is(ValueKind::None)) && c.as_dict().find(dict_key(v)) != nullptr;
    for (const Value& x : iterate(c)) {
      if (values_equal(x, v)) return true;
    }
    return false;
  }
  if (name == "lower" || name == "upper") {  // str(value).islower() / isupper()
    const std::string text = to_str(v).text;
    bool cased = false;
    for (unsigned char c : text) {
      if (std::isalpha(c)) {
        cased = true;
        if ((name == "lower") ? std::isupper(c) : std::islower(c)) return false;
      }
    }
    return cased;
  }
  if (name == "sameas") {
    const Value& o = need_arg();
    if (v.kind() != o.kind()) return false;
    if (v.is(ValueKind::None) || v.is(ValueKind::Undefined)) return true;
    if (v.is(ValueKind::Bool)) return v.as_bool() == o.as_bool();
    if (v.kind() == K::List) return &v.as_list() == &o.as_list();
    if (v.kind() == K::Dict) return &v.as_dict() == &o.as_dict();
    return values_equal(v, o);
  }
  if (name == "escaped") return false;
  (void)r;
  fail("no test named '" + name + "'");
}

}  // namespace stride::jinja

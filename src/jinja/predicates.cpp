// Jinja2's tests (`x is defined`, `x is string`, ...).
#include <cctype>
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"

namespace stride::jinja {

bool apply_test(Renderer& r, const std::string& name, const Value& v, CallArgs& args) {
  using K = Value::Kind;
  const Value* arg = args.get(0, "other");
  auto need_arg = [&]() -> const Value& {
    if (!arg) fail("test '" + name + "' needs an argument");
    return *arg;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_function();
  if (name == "odd" || name == "even") {  // value % 2 == 1 / == 0, on any number
    if (!v.is_number()) fail(std::string("odd/even need a number, not ") + v.type_name());
    double m = std::fmod(v.as_number(), 2.0);
    if (m < 0) m += 2.0;
    return name == "odd" ? m == 1.0 : m == 0.0;
  }
  if (name == "divisibleby") {
    const Value& d = need_arg();
    if (!v.is_int() || !d.is_int() || d.as_int() == 0) fail("divisibleby needs non-zero integers");
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
    if (c.is_string()) return v.is_string() && c.text().find(v.text()) != std::string::npos;
    if (c.is_dict()) return (v.is_string() || v.is_number() || v.is_none()) && c.as_dict().find(dict_key(v)) != nullptr;
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
    if (v.is_none() || v.is_undefined()) return true;
    if (v.is_bool()) return v.as_bool() == o.as_bool();
    if (v.kind() == K::List) return &v.as_list() == &o.as_list();
    if (v.kind() == K::Dict) return &v.as_dict() == &o.as_dict();
    return values_equal(v, o);
  }
  if (name == "escaped") return false;
  (void)r;
  fail("no test named '" + name + "'");
}

}  // namespace stride::jinja

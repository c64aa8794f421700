// Global functions: Jinja2's range, dict, namespace, and transformers'
// raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {

Value global_value(Renderer& r, const std::string& name) {
  Renderer* rp = &r;
  if (name == "range") {
    return Value::function(name, [rp](CallArgs& a) {
      auto arg = [&](size_t i) -> int64_t {
        const Value& v = a.positional[i];
        if (!v.is(ValueKind::Int) && !v.is(ValueKind::Bool)) fail("range() arguments must be integers");
        return v.is(ValueKind::Bool) ? v.as_bool() : v.as_int();
      };
      int64_t start = 0, stop = 0, step = 1;
      if (a.positional.size() == 1) stop = arg(0);
      else if (a.positional.size() == 2 || a.positional.size() == 3) {
        start = arg(0);
        stop = arg(1);
        if (a.positional.size() == 3) step = arg(2);
      } else {
        fail("range expected 1 to 3 arguments");
      }
      if (step == 0) fail("range() arg 3 must not be zero");
      std::vector<Value> out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        rp->count_items(1);
        out.emplace_back(i);
      }
      std::string python_repr = "range(" + std::to_string(start) + ", " + std::to_string(stop) +
                                (step == 1 ? ")" : ", " + std::to_string(step) + ")");
      return Value::list(std::move(out), false, false, std::move(python_repr));
    });
  }
  if (name == "dict") {
    return Value::function(name, [](CallArgs& a) {
      DictData d;
      if (!a.positional.empty() && a.positional[0].is(ValueKind::Dict)) d = a.positional[0].as_dict();
      for (auto& [k, v] : a.named) d.set(k, v);
      return Value::dict(std::move(d));
    });
  }
  if (name == "namespace") {
    return Value::function(name, [](CallArgs& a) {
      DictData attrs;
      if (!a.positional.empty() && a.positional[0].is(ValueKind::Dict)) attrs = a.positional[0].as_dict();
      for (auto& [k, v] : a.named) attrs.set(k, v);
      return Value::namespace_object(std::move(attrs));
    });
  }
  if (name == "raise_exception") {
    return Value::function(name, [](CallArgs& a) -> Value {
      throw JinjaError(ErrorKind::Raised, a.positional.empty() ? std::string() : to_str(a.positional[0]).text);
    });
  }
  if (name == "strftime_now") {
    return Value::function(name, [rp](CallArgs& a) {
      const Value* f = a.get(0, "format");
      if (!f || !f->is(ValueKind::String)) fail("strftime_now needs a format string");
      std::tm tm{};
      if (rp->options().now) {
        tm = *rp->options().now;
      } else {
        const std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      char buf[512];
      const size_t n = f->as_str().text.size() < 128 ? std::strftime(buf, sizeof buf, f->as_str().text.c_str(), &tm) : 0;
      return Value(std::string(buf, n));
    });
  }
  return Value::undefined(name);
}

}  // namespace stride::jinja

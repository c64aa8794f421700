// Global functions: Jinja2's range, dict, namespace, and transformers'
// raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"

namespace stride::jinja {

Value global_value(Renderer& r, const std::string& name) {
  Renderer* rp = &r;
  if (name == "range") {
    return Value::function(name, [rp](CallArgs& a) {
      auto arg = [&](size_t i) -> int64_t {
        const Value& v = a.positional[i];
        if (!v.is_int() && !v.is_bool()) fail("range() arguments must be integers");
        return v.is_bool() ? v.as_bool() : v.as_int();
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
      auto list = std::make_shared<ListData>();
      list->items = std::move(out);
      list->python_repr = step == 1 ? "range(" + std::to_string(start) + ", " + std::to_string(stop) + ")"
                                    : "range(" + std::to_string(start) + ", " + std::to_string(stop) + ", " +
                                          std::to_string(step) + ")";
      return Value(std::shared_ptr<const ListData>(std::move(list)));
    });
  }
  if (name == "dict") {
    return Value::function(name, [](CallArgs& a) {
      DictData d;
      if (!a.positional.empty() && a.positional[0].is_dict()) d = a.positional[0].as_dict();
      for (auto& [k, v] : a.named) d.set(k, v);
      return Value::dict(std::move(d));
    });
  }
  if (name == "namespace") {
    return Value::function(name, [](CallArgs& a) {
      auto ns = std::make_shared<NamespaceData>();
      if (!a.positional.empty() && a.positional[0].is_dict()) ns->attrs = a.positional[0].as_dict();
      for (auto& [k, v] : a.named) ns->attrs.set(k, v);
      return Value(std::move(ns));
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
      if (!f || !f->is_string()) fail("strftime_now needs a format string");
      std::tm tm{};
      if (rp->options().now) {
        tm = *rp->options().now;
      } else {
        const std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      char buf[512];
      const size_t n = f->text().size() < 128 ? std::strftime(buf, sizeof buf, f->text().c_str(), &tm) : 0;
      return Value(std::string(buf, n));
    });
  }
  return Value::undefined(name);
}

}  // namespace stride::jinja

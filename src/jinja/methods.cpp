// Attribute and item access, slices, and the methods of dict and list that
// chat templates call (str's are in string_methods.cpp). Mutating methods are
// refused, as Jinja2's ImmutableSandboxedEnvironment does.
#include <algorithm>
#include <cctype>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {
namespace {

Value dict_method(const Value& self, const std::string& name) {
  if (name == "items" || name == "keys" || name == "values") {
    return Value::function(name, [self, name](CallArgs&) {
      const DictData& d = self.as_dict();
      std::vector<Value> out;
      for (const auto& [k, v] : d.items) {
        Value key = key_value(k, d.literal_keys);
        if (name == "items") out.push_back(Value::list({key, v}, /*tuple=*/true));
        else out.push_back(name == "keys" ? key : v);
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "get") {
    return Value::function(name, [self](CallArgs& a) {
      const Value* k = a.get(0, "key");
      const Value* def = a.get(1, "default");
      if (!k) fail("get expected at least 1 argument");
      const Value* v = (k->is(ValueKind::String) || is_number(*k) || k->is(ValueKind::None)) ? self.as_dict().find(dict_key(*k)) : nullptr;
      return v ? *v : def ? *def : Value::none();
    });
  }
  if (name == "pop" || name == "popitem" || name == "update" || name == "setdefault" || name == "clear") {
    fail("access to attribute '" + name + "' of 'dict' object is unsafe.");
  }
  return Value::undefined(name);
}

Value list_attribute(const Value& self, const std::string& name) {
  if (name == "append" || name == "pop" || name == "extend" || name == "insert" || name == "remove" ||
      name == "clear" || name == "sort" || name == "reverse") {
    fail("access to attribute '" + name + "' of 'list' object is unsafe.");
  }
  if (name == "index" || name == "count") {
    return Value::function(name, [self, name](CallArgs& a) {
      const Value* x = a.get(0, "value");
      if (!x) fail(name + "() takes exactly one argument");
      int64_t n = 0;
      const auto& items = self.as_list().items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (values_equal(items[i], *x)) {
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++n;
        }
      }
      if (name == "index") fail("value is not in list");
      return Value(n);
    });
  }
  return Value::undefined(name);
}

}  // namespace

Value get_attribute(Renderer& r, const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined:
      fail("'" + (obj.undefined_name().empty() ? std::string("value") : obj.undefined_name()) + "' is undefined");
    case Value::Kind::Dict: {
      Value m = dict_method(obj, name);
      if (!m.is(ValueKind::Undefined)) return m;
      const Value* v = obj.as_dict().find(name);
      return v ? *v : Value::undefined(name);
    }
    case Value::Kind::Namespace: {
      const Value* v = obj.as_namespace().attrs.find(name);
      return v ? *v : Value::undefined(name);
    }
    case Value::Kind::String: return string_method(r, obj, name);
    case Value::Kind::List: return list_attribute(obj, name);
    default: return Value::undefined(name);
  }
}

Value get_item(Renderer& r, const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Undefined:
      fail("'" + (obj.undefined_name().empty() ? std::string("value") : obj.undefined_name()) + "' is undefined");
    case Value::Kind::Dict:
      if (key.is(ValueKind::String)) {
        const Value* v = obj.as_dict().find(dict_key(key));
        return v ? *v : get_attribute(r, obj, key.as_str().text);
      }
      if (is_number(key) || key.is(ValueKind::None)) {
        const Value* v = obj.as_dict().find(dict_key(key));
        return v ? *v : Value::undefined();
      }
      return Value::undefined();
    case Value::Kind::List:
    case Value::Kind::String: {
      if (key.is(ValueKind::String)) return get_attribute(r, obj, key.as_str().text);
      if (!key.is(ValueKind::Int) && !key.is(ValueKind::Bool)) return Value::undefined();
      int64_t i = key.is(ValueKind::Bool) ? key.as_bool() : key.as_int();
      if (obj.is(ValueKind::List)) {
        const auto n = static_cast<int64_t>(obj.as_list().items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined();
        return obj.as_list().items[i];
      }
      const std::vector<size_t> off = utf8_offsets(obj.as_str().text);
      const auto n = static_cast<int64_t>(off.size() - 1);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined();
      return Value(obj.as_str().substr(off[i], off[i + 1]));
    }
    case Value::Kind::Namespace:
      return key.is(ValueKind::String) ? get_attribute(r, obj, key.as_str().text) : Value::undefined();
    default: return Value::undefined();
  }
}

Value slice_value(Renderer& r, const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  int64_t n;
  std::vector<size_t> off;
  if (obj.is(ValueKind::List)) {
    n = static_cast<int64_t>(obj.as_list().items.size());
  } else if (obj.is(ValueKind::String)) {
    off = utf8_offsets(obj.as_str().text);
    n = static_cast<int64_t>(off.size() - 1);
  } else if (obj.is(ValueKind::Undefined)) {
    fail("'" + obj.undefined_name() + "' is undefined");
  } else {
    // Jinja2 folds a slice of a literal (3[1:]) to undefined at compile time;
    // a value from the context fails, as here.
    fail(std::string("'") + type_name(obj) + "' object is not subscriptable");
  }
  auto as_index = [](const Value& v, const char* what) -> int64_t {
    if (v.is(ValueKind::Int)) return v.as_int();
    if (v.is(ValueKind::Bool)) return v.as_bool();
    fail(std::string("slice ") + what + " must be an integer or None");
  };
  const int64_t step = step_v.is(ValueKind::None) ? 1 : as_index(step_v, "step");
  if (step == 0) fail("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](const Value& v, int64_t def) -> int64_t {
    if (v.is(ValueKind::None)) return def;
    int64_t i = as_index(v, "index");
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t start = adjust(start_v, step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(stop_v, step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  r.count_items(picks.size());
  if (obj.is(ValueKind::List)) {
    std::vector<Value> out;
    for (int64_t i : picks) out.push_back(obj.as_list().items[i]);
    return Value::list(std::move(out), obj.as_list().tuple);
  }
  if (step == 1) return Value(picks.empty() ? Str() : obj.as_str().substr(off[start], off[stop]));
  Str out;
  for (int64_t i : picks) out.append(obj.as_str().substr(off[i], off[i + 1]));
  return Value(std::move(out));
}

}  // namespace stride::jinja

#include "jinja/json.h"

#include <algorithm>
#include <cmath>

#include "jinja/error.h"
#include "jinja/value_ops.h"

namespace stride::jinja {

template <typename J>
static Value convert(const J& j, bool client, int depth) {
  if (depth > 512) fail("JSON value nested too deeply");
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(Str(j.template get<std::string>(), client));
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert(e, client, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictData d;
      d.literal_keys = client;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(dict_key(Value(it.key())), convert(it.value(), client, depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

Value from_json(const nlohmann::ordered_json& j, bool client) { return convert(j, client, 0); }
Value from_json(const nlohmann::json& j, bool client) { return convert(j, client, 0); }

static void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
          uint32_t cp = c;
          if (c >= 0x80) {  // decode one UTF-8 code point
            const size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
            for (size_t k = 1; k < n && i + 1 < s.size(); ++k) cp = (cp << 6) | (s[++i] & 0x3F);
          }
          char b[16];
          if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
          } else {
            std::snprintf(b, sizeof b, "\\u%04x", cp);
          }
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

static void dump(const Value& v, const JsonDumpOptions& o, int level, std::string& out) {
  if (level > 512) fail("value nested too deeply for tojson");
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      const double d = v.as_float();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
      return;
    }
    case Value::Kind::String: dump_string(v.as_str().text, o.ensure_ascii, out); return;
    case Value::Kind::List: {
      const ListData& l = v.as_list();
      if (l.generator) fail("Object of type generator is not JSON serializable");
      if (!l.python_repr.empty()) fail("Object of type range is not JSON serializable");
      if (l.items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        dump(l.items[i], o, level + 1, out);
      }
      if (o.indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      if (v.is(ValueKind::Namespace)) fail("Object of type Namespace is not JSON serializable");
      const DictData& d = v.as_dict();
      if (d.items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : d.items) items.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        const Value key = key_value(items[i]->first, false);  // json.dumps writes int keys as strings
        if (key.is(ValueKind::String)) dump_string(key.as_str().text, o.ensure_ascii, out);
        else dump_string(key.is(ValueKind::None) ? "null" : key.is(ValueKind::Float) ? float_repr(key.as_float()) : to_str(key).text, o.ensure_ascii, out);
        out += o.key_separator;
        dump(items[i]->second, o, level + 1, out);
      }
      if (o.indent) newline(level);
      out += '}';
      return;
    }
    default: fail(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

std::string dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(v, options, 0, out);
  return out;
}

}  // namespace stride::jinja

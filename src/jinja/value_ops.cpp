#include "jinja/value_ops.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/error.h"

namespace stride::jinja {

double as_number(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Int: return static_cast<double>(v.as_int());
    case ValueKind::Float: return v.as_float();
    case ValueKind::Bool: return v.as_bool() ? 1.0 : 0.0;
    default: fail(std::string("expected a number, got ") + type_name(v));
  }
}

bool is_number(const Value& v) { return v.is(ValueKind::Int) || v.is(ValueKind::Float) || v.is(ValueKind::Bool); }

bool truthy(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined:
    case ValueKind::None: return false;
    case ValueKind::Bool: return v.as_bool();
    case ValueKind::Int: return v.as_int() != 0;
    case ValueKind::Float: return v.as_float() != 0.0;
    case ValueKind::String: return !v.as_str().text.empty();
    case ValueKind::List: return !v.as_list().items.empty() || v.as_list().generator;
    case ValueKind::Dict: return !v.as_dict().items.empty();
    default: return true;
  }
}

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined: return "Undefined";
    case ValueKind::None: return "NoneType";
    case ValueKind::Bool: return "bool";
    case ValueKind::Int: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::String: return "str";
    case ValueKind::List: return v.as_list().generator ? "generator" : v.as_list().tuple ? "tuple" : "list";
    case ValueKind::Dict: return "dict";
    case ValueKind::Function: return "function";
    case ValueKind::Namespace: return "Namespace";
  }
  return "?";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::atoi(sci.c_str() + e + 1);
  bool neg = false;
  if (mant[0] == '-') {
    neg = true;
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(q)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind()) {
    case ValueKind::String: return repr_string(v.as_str().text);
    case ValueKind::List: {
      const ListData& l = v.as_list();
      if (!l.python_repr.empty()) return l.python_repr;
      if (l.generator) return "<generator object>";
      std::string out = l.tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        out += repr(l.items[i]);
      }
      if (l.tuple && l.items.size() == 1) out += ",";
      return out + (l.tuple ? ")" : "]");
    }
    case ValueKind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += repr(key_value(k, false)) + ": " + repr(val);
      }
      return out + "}";
    }
    default: return to_str(v).text;
  }
}

Str to_str(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined: return Str();
    case ValueKind::None: return Str("None");
    case ValueKind::Bool: return Str(v.as_bool() ? "True" : "False");
    case ValueKind::Int: return Str(std::to_string(v.as_int()));
    case ValueKind::Float: return Str(float_repr(v.as_float()));
    case ValueKind::String: return v.as_str();
    case ValueKind::Function: return Str("<function " + v.as_function().name + ">");
    case ValueKind::Namespace: return Str("<Namespace " + repr(Value::dict(v.as_namespace().attrs)) + ">");
    case ValueKind::List:
    case ValueKind::Dict: {
      bool tainted = false;
      // Whether any client string is inside decides the mark of the whole repr.
      std::function<void(const Value&)> scan = [&](const Value& x) {
        if (tainted) return;
        if (x.is(ValueKind::String)) tainted = x.as_str().any_literal();
        else if (x.is(ValueKind::List)) for (const Value& i : x.as_list().items) scan(i);
        else if (x.is(ValueKind::Dict)) {
          tainted = x.as_dict().literal_keys && !x.as_dict().items.empty();
          for (const auto& kv : x.as_dict().items) scan(kv.second);
        }
      };
      scan(v);
      return Str::derived(repr(v), tainted);
    }
  }
  return Str();
}

bool values_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (is_number(a) && is_number(b)) {
    if (a.is(ValueKind::Float) || b.is(ValueKind::Float)) return as_number(a) == as_number(b);
    const int64_t x = a.is(ValueKind::Bool) ? a.as_bool() : a.as_int();
    const int64_t y = b.is(ValueKind::Bool) ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.as_str().text == b.as_str().text;
    case K::List: {
      if (a.as_list().tuple != b.as_list().tuple) return false;  // (1, 2) != [1, 2]
      const auto& x = a.as_list().items;
      const auto& y = b.as_list().items;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case K::Dict: {
      const DictData& x = a.as_dict();
      const DictData& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* o = y.find(k);
        if (!o || !values_equal(v, *o)) return false;
      }
      return true;
    }
    case K::Function: return &a.as_function() == &b.as_function();
    case K::Namespace: return &a.as_namespace() == &b.as_namespace();
    default: return false;
  }
}

int compare_values(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) {
    const double x = as_number(a), y = as_number(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is(ValueKind::String) && b.is(ValueKind::String)) {
    const int c = a.as_str().text.compare(b.as_str().text);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is(ValueKind::List) && b.is(ValueKind::List) && a.as_list().tuple == b.as_list().tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return compare_values(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" + type_name(b) + "'");
}

std::string dict_key(const Value& key) {
  switch (key.kind()) {
    case ValueKind::String:
      // A string that starts like an encoded key is escaped.
      return (!key.as_str().text.empty() && key.as_str().text[0] == '\x01') ? "\x01s" + key.as_str().text : key.as_str().text;
    case ValueKind::Int: return std::string("\x01i") + std::to_string(key.as_int());
    case ValueKind::Bool: return std::string("\x01i") + (key.as_bool() ? "1" : "0");
    case ValueKind::Float: return std::string("\x01f") + float_repr(key.as_float());
    case ValueKind::None: return "\x01n";
    default: fail(std::string("unhashable type: '") + type_name(key) + "'");
  }
}

Value key_value(const std::string& key, bool client) {
  if (key.size() >= 2 && key[0] == '\x01') {
    if (key[1] == 'i') return Value(static_cast<int64_t>(std::strtoll(key.c_str() + 2, nullptr, 10)));
    if (key[1] == 'f') return Value(std::strtod(key.c_str() + 2, nullptr));
    if (key[1] == 's') return Value(Str(key.substr(2), client));
    return Value::none();
  }
  return Value(Str(key, client));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined: return {};
    case ValueKind::List: return v.as_list().items;
    case ValueKind::Dict: {
      std::vector<Value> keys;
      const DictData& d = v.as_dict();
      for (const auto& kv : d.items) keys.push_back(key_value(kv.first, d.literal_keys));
      return keys;
    }
    case ValueKind::String: {
      std::vector<Value> chars;
      const std::vector<size_t> off = utf8_offsets(v.as_str().text);
      for (size_t i = 0; i + 1 < off.size(); ++i) chars.emplace_back(v.as_str().substr(off[i], off[i + 1]));
      return chars;
    }
    case ValueKind::Namespace: fail("'Namespace' object is not iterable");
    default: fail(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined: return 0;
    case ValueKind::String: return static_cast<int64_t>(utf8_length(v.as_str().text));
    case ValueKind::List:
      if (v.as_list().generator) fail("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.as_list().items.size());
    case ValueKind::Dict: return static_cast<int64_t>(v.as_dict().items.size());
    default: fail(std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

}  // namespace stride::jinja

// Jinja2's built-in filters that chat templates use, plus transformers' tojson.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/json.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {
namespace {

bool tainted(const Value& v) { return v.is(ValueKind::String) && v.as_str().any_literal(); }

// Jinja's make_attrgetter: "a.b.0" walks items.
Value attr_path(Renderer& r, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = get_item(r, cur, numeric ? Value(static_cast<int64_t>(std::atoll(part.c_str()))) : Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// The key case-insensitive filters compare by.
Value fold_case(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is(ValueKind::String)) return v;
  return Value(to_lower(v.as_str().text));
}

bool flag(const Value* v, bool def) { return v ? truthy(*v) : def; }

// select / reject / selectattr / rejectattr
Value select_items(Renderer& r, const Value& input, CallArgs& args, bool attr, bool keep) {
  size_t pos = 0;
  std::string attribute;
  if (attr) {
    if (args.positional.empty()) fail("selectattr needs an attribute");
    attribute = to_str(args.positional[pos++]).text;
  }
  std::string test;
  if (pos < args.positional.size()) test = to_str(args.positional[pos++]).text;
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<long>(pos), args.positional.end());
  std::vector<Value> out;
  for (const Value& item : truthy(input) ? iterate(input) : std::vector<Value>{}) {
    r.count_items(1);
    const Value subject = attr ? attr_path(r, item, attribute) : item;
    const bool ok = test.empty() ? truthy(subject) : apply_test(r, test, subject, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out), false, /*generator=*/true);
}

Value map_items(Renderer& r, const Value& input, CallArgs& args) {
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* def = nullptr;
  for (const auto& [k, v] : args.named) {
    if (k == "attribute") attribute = &v;
    if (k == "default") def = &v;
  }
  for (const Value& item : truthy(input) ? iterate(input) : std::vector<Value>{}) {
    r.count_items(1);
    if (attribute) {
      Value v = attr_path(r, item, to_str(*attribute).text);
      out.push_back(v.is(ValueKind::Undefined) && def ? *def : v);
    } else {
      if (args.positional.empty()) fail("map needs a filter name or attribute=");
      CallArgs rest;
      rest.positional.assign(args.positional.begin() + 1, args.positional.end());
      rest.named = args.named;
      out.push_back(apply_filter(r, to_str(args.positional[0]).text, item, rest));
    }
  }
  return Value::list(std::move(out), false, /*generator=*/true);
}

Value sort_items(Renderer& r, const Value& input, CallArgs& args) {
  const bool reverse = flag(args.get(0, "reverse"), false);
  const bool cs = flag(args.get(1, "case_sensitive"), false);
  const Value* attribute = args.get(2, "attribute");
  std::vector<Value> items = iterate(input);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    Value k = attribute ? attr_path(r, items[i], to_str(*attribute).text) : items[i];
    keyed.emplace_back(fold_case(k, cs), i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? compare_values(b.first, a.first) < 0 : compare_values(a.first, b.first) < 0;
  });
  std::vector<Value> out;
  for (auto& [k, i] : keyed) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Value tojson(const Value& input, CallArgs& args) {
  JsonDumpOptions o;
  const Value* ensure_ascii = args.get(0, "ensure_ascii");
  const Value* indent = args.get(1, "indent");
  const Value* separators = args.get(2, "separators");
  const Value* sort_keys = args.get(3, "sort_keys");
  o.ensure_ascii = flag(ensure_ascii, false);
  o.sort_keys = flag(sort_keys, false);
  if (indent && !indent->is(ValueKind::None)) {
    if (indent->is(ValueKind::String)) o.indent = indent->as_str().text;
    else o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
    o.item_separator = ",";
  }
  if (separators && !separators->is(ValueKind::None)) {
    if (!separators->is(ValueKind::List) || separators->as_list().items.size() != 2) fail("separators must be a pair");
    o.item_separator = to_str(separators->as_list().items[0]).text;
    o.key_separator = to_str(separators->as_list().items[1]).text;
  }
  bool any_client = false;  // tojson of client data is client text (see str.h)
  std::function<void(const Value&)> scan = [&](const Value& x) {
    if (any_client) return;
    if (x.is(ValueKind::String)) any_client = x.as_str().any_literal();
    else if (x.is(ValueKind::List)) for (const Value& i : x.as_list().items) scan(i);
    else if (x.is(ValueKind::Dict)) {
      any_client = x.as_dict().literal_keys && !x.as_dict().items.empty();
      for (const auto& kv : x.as_dict().items) scan(kv.second);
    }
  };
  scan(input);
  return Value(Str::derived(dumps(input, o), any_client));
}

Value indent_filter(const Value& input, CallArgs& args) {
  if (!input.is(ValueKind::String)) fail(std::string("can only concatenate ") + type_name(input) + " and str in indent");
  const Value* width = args.get(0, "width");
  const bool first = flag(args.get(1, "first"), false);
  const bool blank = flag(args.get(2, "blank"), false);
  std::string pad = width ? (width->is(ValueKind::String) ? width->as_str().text : std::string(width->as_int(), ' ')) : "    ";
  std::string s = to_str(input).text + "\n";
  std::vector<std::string> lines;  // str.splitlines on "\n" (templates' text has no other breaks)
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') {
      lines.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + pad : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : pad + lines[i]);
  }
  if (first) rv = pad + rv;
  return Value(Str::derived(std::move(rv), tainted(input)));
}

}  // namespace

Value apply_filter(Renderer& r, const std::string& name, const Value& input, CallArgs& args) {
  if (name == "tojson") return tojson(input, args);
  if (name == "length" || name == "count") return Value(length_of(input));
  if (name == "string") return Value(to_str(input));
  if (name == "safe") {
    Str s = to_str(input);
    s.markup = true;
    return Value(std::move(s));
  }
  if (name == "trim") {
    const Value* chars = args.get(0, "chars");
    return Value(strip_str(to_str(input), chars && !chars->is(ValueKind::None) ? chars : nullptr, true, true));
  }
  if (name == "default" || name == "d") {
    const Value* def = args.get(0, "default_value");
    const bool boolean = flag(args.get(1, "boolean"), false);
    if (input.is(ValueKind::Undefined) || (boolean && !truthy(input))) return def ? *def : Value(std::string());
    return input;
  }
  if (name == "join") {
    const Value* sep = args.get(0, "d");
    const Value* attribute = args.get(1, "attribute");
    Str out;
    bool first = true;
    for (const Value& item : iterate(input)) {
      if (!first && sep) out.append(to_str(*sep));
      first = false;
      out.append(to_str(attribute ? attr_path(r, item, to_str(*attribute).text) : item));
      r.check_size(out.text.size());
    }
    return Value(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title" || name == "replace") {
    Value s(to_str(input));
    if (name == "title") {  // Jinja's title: words start after spaces, '-', and opening brackets
      std::string o = s.as_str().text;
      bool start = true;
      for (char& c : o) {
        if (c & 0x80) {
          start = false;
          continue;
        }
        const auto u = static_cast<unsigned char>(c);
        if (std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
          start = true;
        } else {
          c = static_cast<char>(start ? ::toupper(u) : ::tolower(u));
          start = false;
        }
      }
      return Value(Str::derived(std::move(o), tainted(s)));
    }
    Value method = get_attribute(r, s, name);
    return method.as_function().call(args);
  }
  if (name == "list") return Value::list(iterate(input));
  if (name == "items") {
    if (input.is(ValueKind::Undefined)) return Value::list({});
    if (!input.is(ValueKind::Dict)) fail("items filter needs a mapping");
    Value method = get_attribute(r, input, "items");
    return method.as_function().call(args);
  }
  if (name == "dictsort") {
    if (!input.is(ValueKind::Dict)) fail("dictsort filter needs a mapping");
    const bool cs = flag(args.get(0, "case_sensitive"), false);
    const Value* by = args.get(1, "by");
    const bool by_value = by && by->is(ValueKind::String) && by->as_str().text == "value";
    const bool reverse = flag(args.get(2, "reverse"), false);
    const DictData& d = input.as_dict();
    std::vector<Value> pairs;
    for (const auto& [k, v] : d.items) pairs.push_back(Value::list({key_value(k, d.literal_keys), v}, true));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
      const Value ka = fold_case(a.as_list().items[by_value], cs);
      const Value kb = fold_case(b.as_list().items[by_value], cs);
      return reverse ? compare_values(kb, ka) < 0 : compare_values(ka, kb) < 0;
    });
    return Value::list(std::move(pairs));
  }
  if (name == "first" || name == "last") {
    std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "map") return map_items(r, input, args);
  if (name == "select" || name == "reject") return select_items(r, input, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_items(r, input, args, true, name == "selectattr");
  if (name == "unique") {
    const bool cs = flag(args.get(0, "case_sensitive"), false);
    const Value* attribute = args.get(1, "attribute");
    std::vector<Value> out, seen;
    for (const Value& item : iterate(input)) {
      r.count_items(1);
      Value key = fold_case(attribute ? attr_path(r, item, to_str(*attribute).text) : item, cs);
      if (key.is(ValueKind::List) || key.is(ValueKind::Dict)) fail(std::string("unhashable type: '") + type_name(key) + "'");
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out), false, true);
  }
  if (name == "sort") return sort_items(r, input, args);
  if (name == "reverse") {
    if (input.is(ValueKind::String)) {
      const std::vector<size_t> off = utf8_offsets(input.as_str().text);
      Str out;
      for (size_t i = off.size() - 1; i > 0; --i) out.append(input.as_str().substr(off[i - 1], off[i]));
      return Value(std::move(out));
    }
    std::vector<Value> items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items), false, true);
  }
  if ((name == "int" || name == "float") && input.is(ValueKind::Undefined)) fail("'" + input.undefined_name() + "' is undefined");
  if (name == "int") {
    const Value* def = args.get(0, "default");
    if (input.is(ValueKind::String) && input.as_str().text.find_first_of("xXpP") != std::string::npos) {
      return def ? *def : Value(int64_t{0});  // strtod would read hex; Python's int()/float() do not
    }
    if (input.is(ValueKind::Int)) return input;
    if (input.is(ValueKind::Bool)) return Value(static_cast<int64_t>(input.as_bool()));
    if (input.is(ValueKind::Float)) return Value(static_cast<int64_t>(input.as_float()));
    if (input.is(ValueKind::String)) {
      std::string s = strip_str(input.as_str(), nullptr, true, true).text;
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') return Value(static_cast<int64_t>(v));
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value(static_cast<int64_t>(d));
    }
    return def ? *def : Value(int64_t{0});
  }
  if (name == "float") {
    const Value* def = args.get(0, "default");
    if (input.is(ValueKind::String) && input.as_str().text.find_first_of("xXpP") != std::string::npos) {
      return def ? *def : Value(0.0);
    }
    if (is_number(input)) return Value(as_number(input));
    if (input.is(ValueKind::String)) {
      std::string s = strip_str(input.as_str(), nullptr, true, true).text;
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value(d);
    }
    return def ? *def : Value(0.0);
  }
  if (name == "abs") {
    if (input.is(ValueKind::Int)) return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    return Value(std::fabs(as_number(input)));
  }
  if (name == "round") {
    if (input.is(ValueKind::Int) || input.is(ValueKind::Bool)) return Value(input.is(ValueKind::Bool) ? int64_t{input.as_bool()} : input.as_int());
    const Value* p = args.get(0, "precision");
    const Value* m = args.get(1, "method");
    const double scale = std::pow(10.0, p ? as_number(*p) : 0.0);
    const std::string method = m ? to_str(*m).text : "common";
    const double x = as_number(input) * scale;
    // Python's round() sends halves to the even neighbour, as nearbyint does by default.
    const double v = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value(v / scale);
  }
  if (name == "indent") return indent_filter(input, args);
  if (name == "e" || name == "escape") {
    if (input.is(ValueKind::String) && input.as_str().markup) return input;
    Str s = Str::derived(html_escape(to_str(input).text), tainted(input));
    s.markup = true;
    return Value(std::move(s));
  }
  if (name == "min" || name == "max") {
    const bool cs = flag(args.get(0, "case_sensitive"), false);
    const Value* attribute = args.get(1, "attribute");
    std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined(name);
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
      auto key = [&](size_t k) {
        return fold_case(attribute ? attr_path(r, items[k], to_str(*attribute).text) : items[k], cs);
      };
      const int c = compare_values(key(i), key(best));
      if (name == "min" ? c < 0 : c > 0) best = i;
    }
    return items[best];
  }
  if (name == "sum") {
    const Value* attribute = args.get(0, "attribute");
    const Value* start = args.get(1, "start");
    Value total = start ? *start : Value(int64_t{0});
    for (const Value& item : iterate(input)) {
      const Value x = attribute ? attr_path(r, item, to_str(*attribute).text) : item;
      total = (total.is(ValueKind::Int) && x.is(ValueKind::Int)) ? Value(total.as_int() + x.as_int()) : Value(as_number(total) + as_number(x));
    }
    return total;
  }
  if (name == "wordcount") {  // runs of \w (letters, digits, '_', any non-ASCII byte)
    int64_t words = 0;
    bool in_word = false;
    for (unsigned char c : to_str(input).text) {
      const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      words += w && !in_word;
      in_word = w;
    }
    return Value(words);
  }
  if (name == "center") {
    const Value* w = args.get(0, "width");
    const std::string s = to_str(input).text;
    const int64_t width = w ? w->as_int() : 80;
    const int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value(to_str(input));
    r.check_size(static_cast<size_t>(width));
    const int64_t total = width - len, left = total / 2 + (total & width & 1);
    return Value(Str::derived(std::string(left, ' ') + s + std::string(total - left, ' '), tainted(input)));
  }
  if (name == "attr") {
    const Value* n = args.get(0, "name");
    if (!n) return Value::undefined();
    // Jinja's attr() looks up attributes only: a dict's keys are not attributes.
    if (input.is(ValueKind::Dict)) {
      const std::string key = to_str(*n).text;
      const bool method = key == "items" || key == "keys" || key == "values" || key == "get";
      return method ? get_attribute(r, input, key) : Value::undefined(key);
    }
    return get_attribute(r, input, to_str(*n).text);
  }
  fail("no filter named '" + name + "'");
}

}  // namespace stride::jinja

// The methods of str that chat templates call: strip, split, startswith,
// replace, format, ... with Python's semantics. Substrings keep their client
// ranges (see str.h).
#include <algorithm>
#include <cctype>
#include <cstring>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace stride::jinja {
namespace {

std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> out;
  const std::vector<size_t> off = utf8_offsets(s);
  for (size_t i = 0; i + 1 < off.size(); ++i) {
    uint32_t cp = 0;
    for (size_t b = off[i]; b < off[i + 1]; ++b) cp = (cp << 8) | static_cast<unsigned char>(s[b]);
    out.push_back(cp);  // raw bytes packed: only compared for equality
  }
  return out;
}

uint32_t packed_at(const std::string& s, size_t b, size_t e) {
  uint32_t cp = 0;
  for (size_t i = b; i < e; ++i) cp = (cp << 8) | static_cast<unsigned char>(s[i]);
  return cp;
}

const std::string& str_arg(const Value* v, const char* what) {
  if (!v || !v->is(ValueKind::String)) fail(std::string(what) + " must be a string");
  return v->as_str().text;
}

// Python's str.split / rsplit.
Value split(Renderer& r, const Str& s, const Value* sep_v, const Value* max_v, bool from_right) {
  int64_t maxsplit = max_v && !max_v->is(ValueKind::None) ? static_cast<int64_t>(as_number(*max_v)) : -1;
  std::vector<std::pair<size_t, size_t>> pieces;
  const std::string& t = s.text;
  if (!sep_v || sep_v->is(ValueKind::None)) {
    // Runs of whitespace separate; empty pieces are dropped.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < t.size()) {
      while (i < t.size() && python_space_at(t, i)) i += python_space_at(t, i);
      if (i >= t.size()) break;
      size_t j = i;
      while (j < t.size() && !python_space_at(t, j)) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= words.size()) {
      pieces = words;
    } else if (!from_right) {
      pieces.assign(words.begin(), words.begin() + maxsplit);
      pieces.emplace_back(words[maxsplit].first, t.size());  // the rest keeps its trailing spaces
    } else {
      const size_t keep = words.size() - maxsplit;
      pieces.emplace_back(0, words[keep - 1].second);  // the rest keeps its leading spaces
      pieces.insert(pieces.end(), words.begin() + keep, words.end());
    }
  } else {
    const std::string& sep = sep_v->as_str().text;
    if (sep.empty()) fail("empty separator");
    std::vector<size_t> hits;
    for (size_t p = t.find(sep); p != std::string::npos; p = t.find(sep, p + sep.size())) hits.push_back(p);
    if (maxsplit >= 0 && hits.size() > static_cast<size_t>(maxsplit)) {
      if (from_right) hits.erase(hits.begin(), hits.end() - maxsplit);
      else hits.resize(maxsplit);
    }
    size_t start = 0;
    for (size_t h : hits) {
      pieces.emplace_back(start, h);
      start = h + sep.size();
    }
    pieces.emplace_back(start, t.size());
  }
  r.count_items(pieces.size());
  std::vector<Value> out;
  for (auto [b, e] : pieces) out.emplace_back(s.substr(b, e));
  return Value::list(std::move(out));
}

bool prefix_match(const std::string& s, const Value& p, bool suffix) {
  auto one = [&](const std::string& x) {
    if (x.size() > s.size()) return false;
    return suffix ? s.compare(s.size() - x.size(), x.size(), x) == 0 : s.compare(0, x.size(), x) == 0;
  };
  if (p.is(ValueKind::String)) return one(p.as_str().text);
  if (p.is(ValueKind::List)) {
    for (const Value& v : p.as_list().items) {
      if (v.is(ValueKind::String) && one(v.as_str().text)) return true;
    }
    return false;
  }
  fail("startswith/endswith first arg must be str or a tuple of str");
}

// str.format with {} / {0} / {name} fields (no format specs beyond those).
Str python_format(const Str& f, CallArgs& args) {
  std::string out;
  bool tainted = f.any_literal();
  size_t auto_index = 0;
  const std::string& t = f.text;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{' && i + 1 < t.size() && t[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (t[i] == '}' && i + 1 < t.size() && t[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (t[i] == '{') {
      const size_t close = t.find('}', i);
      if (close == std::string::npos) fail("Single '{' encountered in format string");
      std::string field = t.substr(i + 1, close - i - 1);
      // {name!conversion:spec}: !r / !s and a spec of [[fill]align][width]
      std::string spec;
      char conversion = 's';
      if (const size_t colon = field.find(':'); colon != std::string::npos) {
        spec = field.substr(colon + 1);
        field.resize(colon);
      }
      if (const size_t bang = field.find('!'); bang != std::string::npos) {
        conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
        field.resize(bang);
      }
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < args.positional.size() ? &args.positional[auto_index++] : nullptr;
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        const size_t k = std::stoul(field);
        v = k < args.positional.size() ? &args.positional[k] : nullptr;
      } else {
        for (const auto& [n, val] : args.named) {
          if (n == field) v = &val;
        }
      }
      if (!v) fail("format field '" + field + "' has no argument");
      tainted |= v->is(ValueKind::String) && v->as_str().any_literal();
      std::string text = conversion == 'r' ? repr(*v) : to_str(*v).text;
      if (!spec.empty()) {
        char fill = ' ', align = is_number(*v) && conversion == 's' ? '>' : '<';
        size_t k = 0;
        if (spec.size() >= 2 && std::strchr("<>^", spec[1])) {
          fill = spec[0];
          align = spec[1];
          k = 2;
        } else if (std::strchr("<>^", spec[0])) {
          align = spec[0];
          k = 1;
        }
        size_t width = 0;
        for (; k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k])) && width < 100000; ++k) {
          width = width * 10 + (spec[k] - '0');
        }
        if (k != spec.size()) fail("unsupported format spec '" + spec + "'");
        const size_t len = utf8_length(text);
        if (width > len) {
          const size_t pad = width - len;
          const size_t left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
          text = std::string(left, fill) + text + std::string(pad - left, fill);
        }
      }
      out += text;
      i = close;
    } else {
      out += t[i];
    }
  }
  return Str::derived(std::move(out), tainted);
}

}  // namespace

Value string_method(Renderer& r, const Value& self, const std::string& name) {
  static const char* kNames[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith",
                                 "upper", "lower", "replace", "title", "capitalize", "format", "find",
                                 "count", "join", "splitlines", "isdigit", "isalpha", "isspace", "isalnum",
                                 "islower", "isupper", "rfind", "index", "center"};
  if (std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) ==
      std::end(kNames)) {
    return Value::undefined(name);
  }
  Renderer* rp = &r;
  return Value::function(name, [rp, self, name](CallArgs& a) -> Value {
    const Str& s = self.as_str();
    const std::string& t = s.text;
    const bool taint = s.any_literal();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const Value* chars = a.get(0, "chars");
      return Value(strip_str(s, chars && !chars->is(ValueKind::None) ? chars : nullptr, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") return split(*rp, s, a.get(0, "sep"), a.get(1, "maxsplit"), name == "rsplit");
    if (name == "startswith" || name == "endswith") {
      const Value* p = a.get(0, "prefix");
      if (!p) fail(name + "() takes at least 1 argument");
      return Value(prefix_match(t, *p, name == "endswith"));
    }
    if (name == "upper") return Value(Str::derived(to_upper(t), taint));
    if (name == "lower") return Value(Str::derived(to_lower(t), taint));
    if (name == "capitalize") {
      const std::vector<size_t> off = utf8_offsets(t);
      std::string o = off.size() > 1 ? to_upper(std::string_view(t).substr(0, off[1])) +
                                           to_lower(std::string_view(t).substr(off[1]))
                                     : std::string();
      return Value(Str::derived(std::move(o), taint));
    }
    if (name == "title") {
      std::string o = t;
      bool prev_cased = false;
      for (char& c : o) {
        const bool alpha = std::isalpha(static_cast<unsigned char>(c));
        if (alpha) c = static_cast<char>(prev_cased ? ::tolower(c) : ::toupper(c));
        prev_cased = alpha;
      }
      return Value(Str::derived(std::move(o), taint));
    }
    if (name == "replace") {
      const std::string& old = str_arg(a.get(0, "old"), "replace() argument 1");
      const Value* nv = a.get(1, "new");
      if (!nv || !nv->is(ValueKind::String)) fail("replace() argument 2 must be str");
      const Value* cv = a.get(2, "count");
      int64_t count = cv ? static_cast<int64_t>(as_number(*cv)) : -1;
      Str out;
      size_t pos = 0;
      if (old.empty()) {  // Python inserts `new` around every code point
        const std::vector<size_t> off = utf8_offsets(t);
        for (size_t k = 0; k < off.size(); ++k) {
          if (count != 0) {
            out.append(nv->as_str());
            if (count > 0) --count;
          }
          if (k + 1 < off.size()) out.append(s.substr(off[k], off[k + 1]));
          rp->check_size(out.text.size());
        }
        return Value(std::move(out));
      }
      for (size_t h = t.find(old); h != std::string::npos && count != 0; h = t.find(old, pos), --count) {
        out.append(s.substr(pos, h));
        out.append(nv->as_str());
        rp->check_size(out.text.size());
        pos = h + old.size();
      }
      out.append(s.substr(pos, t.size()));
      return Value(std::move(out));
    }
    if (name == "format") return Value(python_format(s, a));
    if (name == "center") {
      const Value* w = a.get(0, "width");
      if (!w || !w->is(ValueKind::Int)) fail("center() needs an integer width");
      const auto len = static_cast<int64_t>(utf8_length(t));
      if (w->as_int() <= len) return self;
      rp->check_size(static_cast<size_t>(w->as_int()));
      // Python: left = pad / 2 + (pad & width & 1)
      const int64_t pad = w->as_int() - len, left = pad / 2 + (pad & w->as_int() & 1);
      return Value(Str::derived(std::string(left, ' ') + t + std::string(pad - left, ' '), taint));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "count") {
      const std::string& sub = str_arg(a.get(0, "sub"), name.c_str());
      if (name == "count") {
        if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(t) + 1));
        int64_t n = 0;
        for (size_t p = t.find(sub); p != std::string::npos; p = t.find(sub, p + sub.size())) ++n;
        return Value(n);
      }
      const size_t p = name == "rfind" ? t.rfind(sub) : t.find(sub);
      if (p == std::string::npos) {
        if (name == "index") fail("substring not found");
        return Value(int64_t{-1});
      }
      return Value(static_cast<int64_t>(utf8_length(std::string_view(t).substr(0, p))));
    }
    if (name == "join") {
      const Value* it = a.get(0, "iterable");
      if (!it) fail("join() takes exactly one argument");
      Str out;
      bool first = true;
      for (const Value& v : iterate(*it)) {
        if (!v.is(ValueKind::String)) fail("sequence item: expected str instance");
        if (!first) out.append(s);
        first = false;
        out.append(v.as_str());
        rp->check_size(out.text.size());
      }
      return Value(std::move(out));
    }
    if (name == "splitlines") {
      std::vector<Value> lines;
      size_t start = 0;
      for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '\n' || t[i] == '\r') {
          lines.emplace_back(s.substr(start, i));
          if (t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
          start = i + 1;
        }
      }
      if (start < t.size()) lines.emplace_back(s.substr(start, t.size()));
      return Value::list(std::move(lines));
    }
    auto all = [&](int (*pred)(int)) {
      if (t.empty()) return false;
      for (unsigned char c : t) {
        if (!pred(c)) return false;
      }
      return true;
    };
    if (name == "isdigit") return Value(all(::isdigit));
    if (name == "isalpha") return Value(all(::isalpha));
    if (name == "isspace") return Value(all(::isspace));
    if (name == "isalnum") return Value(all(::isalnum));
    bool has_cased = false, lower = true, upper = true;
    for (unsigned char c : t) {
      if (std::isalpha(c)) {
        has_cased = true;
        lower &= std::islower(c) != 0;
        upper &= std::isupper(c) != 0;
      }
    }
    if (name == "islower") return Value(has_cased && lower);
    return Value(has_cased && upper);
  });
}


Str strip_str(const Str& s, const Value* chars, bool left, bool right) {
  const std::string& t = s.text;
  std::vector<uint32_t> set;
  if (chars) set = code_points(str_arg(chars, "strip arg"));
  const std::vector<size_t> off = utf8_offsets(t);
  size_t b = 0, e = off.size() - 1;  // code point indices
  auto strippable = [&](size_t i) {
    if (!chars) return python_space_at(t, off[i]) != 0;
    return std::find(set.begin(), set.end(), packed_at(t, off[i], off[i + 1])) != set.end();
  };
  if (left) {
    while (b < e && strippable(b)) ++b;
  }
  if (right) {
    while (e > b && strippable(e - 1)) --e;
  }
  return s.substr(off[b], off[e]);
}

}  // namespace stride::jinja

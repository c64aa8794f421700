#include "grammar/json_schema.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/schema_converter.h"
#include "grammar/schema_numbers.h"
#include "grammar/schema_pattern.h"

namespace stride::grammar {

namespace {

using json = nlohmann::json;

// The building blocks; each rule is added to a grammar only when used.
// Whitespace is bounded so that a model cannot pad forever.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"ws", "( \" \" | \"\\n\" [ \\t]{0,20} )?"},
      {"json-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"},
      {"json-string", "\"\\\"\" json-char* \"\\\"\""},
      {"json-int", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )"},
      {"json-number", "json-int ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?"},
      {"json-boolean", "\"true\" | \"false\""},
      {"json-null", "\"null\""},
      {"json-value", "json-object | json-array | json-string | json-number | json-boolean | json-null"},
      {"json-object",
       "\"{\" ws ( json-string ws \":\" ws json-value ws ( \",\" ws json-string ws \":\" ws json-value ws )* )? \"}\""},
      {"json-array", "\"[\" ws ( json-value ws ( \",\" ws json-value ws )* )? \"]\""},
  };
  return p;
}
const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> d = {
      {"json-string", {"json-char"}},
      {"json-number", {"json-int"}},
      {"json-value", {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
      {"json-object", {"ws", "json-string", "json-value"}},
      {"json-array", {"ws", "json-value"}},
  };
  return d;
}

// Formats as GBNF over the string's content (RFC 3339 date/time, RFC 4122 uuid).
const std::map<std::string, std::string>& formats() {
  static const std::map<std::string, std::string> f = {
      {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )"},
      {"time", "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
      {"uuid", "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}"},
  };
  return f;
}

// The keywords that belong to one type.
const std::map<std::string, std::set<std::string>>& type_keywords() {
  static const std::map<std::string, std::set<std::string>> k = {
      {"object", {"properties", "required", "additionalProperties"}},
      {"array", {"items", "minItems", "maxItems"}},
      {"string", {"pattern", "minLength", "maxLength", "format"}},
      {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
      {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
  };
  return k;
}

}  // namespace

const std::set<std::string>& schema_annotations() {
  static const std::set<std::string> a = {"title", "description", "default", "examples", "$schema", "$id",
                                          "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                          "definitions", "strict", "name"};
  return a;
}

Expected<std::string> SchemaConverter::run() {
  auto body = visit(root_, "", 0);
  if (!body.ok()) return body.status();
  std::string out = "root ::= " + *body + "\n";
  for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
  return out;
}

Status SchemaConverter::error(const std::string& path, const std::string& what) const {
  return InvalidArgument("schema at '" + (path.empty() ? std::string("#") : "#" + path) + "': " + what);
}

std::string SchemaConverter::use(const std::string& primitive) {
  if (rules_.count(primitive)) return primitive;
  rules_[primitive] = primitives().at(primitive);
  if (auto it = primitive_deps().find(primitive); it != primitive_deps().end())
    for (const std::string& d : it->second) use(d);
  return primitive;
}

Expected<std::string> SchemaConverter::add_rule(const std::string& body) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  if (rules_.size() >= opts_.max_rules) {
    return InvalidArgument("schema: too large (over " + std::to_string(opts_.max_rules) + " grammar rules)");
  }
  const std::string name = "s" + std::to_string(rules_.size());
  rules_[name] = body;
  by_body_[body] = name;
  return name;
}

Status SchemaConverter::unsupported(const std::string& path, const std::string& keyword) const {
  if (!opts_.strict) return Status::Ok();
  return error(path, "the keyword '" + keyword + "' is not supported with strict: true");
}

Status SchemaConverter::check_keywords(const json& s, const std::string& path, const std::set<std::string>& allowed) const {
  for (const auto& [k, v] : s.items()) {
    if (allowed.count(k) || schema_annotations().count(k)) continue;
    STRIDE_RETURN_IF_ERROR(unsupported(path, k));
  }
  return Status::Ok();
}

Expected<int> SchemaConverter::bound(const json& s, const char* key, const std::string& path, int fallback) const {
  if (!s.contains(key)) return fallback;
  const json& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) return error(path, std::string("'") + key + "' must be a non-negative integer");
  if (v.get<int64_t>() > opts_.max_bound) {
    return error(path, std::string("'") + key + "' above " + std::to_string(opts_.max_bound) + " is not supported");
  }
  return (int)v.get<int64_t>();
}

std::string SchemaConverter::repeat(const std::string& item, int lo, int hi) {
  if (hi < 0) return lo == 0 ? "( " + item + " )*" : lo == 1 ? "( " + item + " )+" : "( " + item + " ){" + std::to_string(lo) + ",}";
  return "( " + item + " ){" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

Expected<std::string> SchemaConverter::visit(const json& s, const std::string& path, int depth) {
  if (depth > opts_.max_depth) return error(path, "the schema nests too deeply");
  if (s.is_boolean()) {
    if (s.get<bool>()) return use("json-value");
    return error(path, "the schema 'false' allows nothing");
  }
  if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
  if (s.contains("$ref")) return visit_ref(s, path, depth);
  for (const char* key : {"anyOf", "oneOf"})
    if (s.contains(key)) return visit_any_of(s, key, path, depth);
  if (s.contains("allOf")) return visit_all_of(s, path, depth);
  if (s.contains("const")) {
    STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"const", "type", "enum"}));
    return literal_of(s["const"]);
  }
  if (s.contains("enum")) {
    STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"enum", "type"}));
    const json& e = s["enum"];
    if (!e.is_array() || e.empty()) return error(path, "'enum' must be a non-empty array");
    std::string out = "(";
    for (size_t k = 0; k < e.size(); ++k) out += (k ? " | " : " ") + gbnf_literal(e[k].dump());
    return out + " )";
  }
  std::string type;
  if (s.contains("type")) {
    const json& t = s["type"];
    if (t.is_array()) return visit_type_list(s, path, depth);
    if (!t.is_string()) return error(path, "'type' must be a string or an array of strings");
    type = t.get<std::string>();
  } else if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
    type = "object";
  } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
    type = "array";
  } else if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
    type = "string";
  } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
             s.contains("exclusiveMaximum")) {
    type = "number";
  } else {
    STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {}));
    return use("json-value");
  }
  if (type == "object") return visit_object(s, path, depth);
  if (type == "array") return visit_array(s, path, depth);
  if (type == "string") return visit_string(s, path);
  if (type == "number" || type == "integer") return visit_number(s, path, type == "integer");
  if (type == "boolean") {
    STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type"}));
    return use("json-boolean");
  }
  if (type == "null") {
    STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type"}));
    return use("json-null");
  }
  return error(path, "unknown type '" + type + "'");
}

Expected<std::string> SchemaConverter::visit_type_list(const json& s, const std::string& path, int depth) {
  const json& types = s["type"];
  if (types.empty()) return error(path, "'type' must not be an empty array");
  std::string out = "(";
  for (size_t k = 0; k < types.size(); ++k) {
    if (!types[k].is_string()) return error(path, "'type' entries must be strings");
    // Each branch keeps only its own type's keywords ({"type": ["string",
    // "null"], "maxLength": 9} limits the string).
    json one = s;
    one["type"] = types[k];
    const std::string t = types[k].get<std::string>();
    for (const auto& [other, keys] : type_keywords()) {
      if (other == t) continue;
      for (const std::string& key : keys) {
        const auto own = type_keywords().find(t);
        if (own == type_keywords().end() || !own->second.count(key)) one.erase(key);
      }
    }
    auto e = visit(one, path, depth + 1);
    if (!e.ok()) return e.status();
    out += (k ? " | " : " ") + *e;
  }
  return out + " )";
}

Expected<std::string> SchemaConverter::visit_ref(const json& s, const std::string& path, int depth) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"$ref"}));
  if (!s["$ref"].is_string()) return error(path, "'$ref' must be a string");
  const std::string ref = s["$ref"].get<std::string>();
  if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
  if (ref.empty() || ref[0] != '#') return error(path, "only local references ('#/...') are supported");
  const json* target = nullptr;
  try {
    const json::json_pointer ptr(ref.substr(1));
    if (root_.contains(ptr)) target = &root_.at(ptr);
  } catch (const std::exception&) {
    return error(path, "'" + ref + "' is not a valid JSON pointer");
  }
  if (!target) return error(path, "'" + ref + "' does not resolve");
  if (rules_.size() >= opts_.max_rules) return InvalidArgument("schema: too large");
  const std::string name = "ref" + std::to_string(refs_.size());
  refs_[ref] = name;
  rules_[name] = "";  // reserved: a recursive reference finds the name
  auto body = visit(*target, ref.substr(1), depth + 1);
  if (!body.ok()) return body.status();
  rules_[name] = *body;
  return name;
}

Expected<std::string> SchemaConverter::visit_any_of(const json& s, const char* key, const std::string& path, int depth) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {key}));
  const json& list = s[key];
  if (!list.is_array() || list.empty()) return error(path, std::string("'") + key + "' must be a non-empty array");
  std::string out = "(";
  for (size_t k = 0; k < list.size(); ++k) {
    auto e = visit(list[k], path + "/" + key + "/" + std::to_string(k), depth + 1);
    if (!e.ok()) return e.status();
    out += (k ? " | " : " ") + *e;
  }
  return out + " )";
}

Expected<std::string> SchemaConverter::visit_array(const json& s, const std::string& path, int depth) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type", "items", "minItems", "maxItems"}));
  std::string item = use("json-value");
  if (s.contains("items")) {
    auto e = visit(s["items"], path + "/items", depth + 1);
    if (!e.ok()) return e.status();
    auto r = add_rule(*e);
    if (!r.ok()) return r.status();
    item = *r;
  }
  auto lo = bound(s, "minItems", path, 0);
  if (!lo.ok()) return lo.status();
  auto hi = bound(s, "maxItems", path, -1);
  if (!hi.ok()) return hi.status();
  if (*hi >= 0 && *hi < *lo) return error(path, "'maxItems' is below 'minItems'");
  const std::string ws = use("ws");
  if (*hi == 0) return "\"[\" " + ws + " \"]\"";
  const std::string more = repeat(ws + " \",\" " + ws + " " + item, std::max(*lo - 1, 0), *hi < 0 ? -1 : *hi - 1);
  const std::string items = item + " " + more + " " + ws;
  if (*lo == 0) return "\"[\" " + ws + " ( " + items + " )? \"]\"";
  return "\"[\" " + ws + " " + items + " \"]\"";
}

Expected<std::string> SchemaConverter::visit_string(const json& s, const std::string& path) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type", "pattern", "minLength", "maxLength", "format"}));
  const std::string quote = "\"\\\"\"";
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return error(path, "'pattern' must be a string");
    if (s.contains("minLength") || s.contains("maxLength")) STRIDE_RETURN_IF_ERROR(unsupported(path, "minLength/maxLength with pattern"));
    auto p = pattern_to_gbnf(s["pattern"].get<std::string>(), use("json-char"));
    if (!p.ok()) return error(path, p.status().message());
    return quote + " " + *p + " " + quote;
  }
  if (s.contains("format")) {
    const json& f = s["format"];
    if (!f.is_string()) return error(path, "'format' must be a string");
    const std::string name = f.get<std::string>();
    if (name == "date-time") return quote + " " + formats().at("date") + " \"T\" " + formats().at("time") + " " + quote;
    if (auto it = formats().find(name); it != formats().end()) return quote + " " + it->second + " " + quote;
    STRIDE_RETURN_IF_ERROR(unsupported(path, "format: " + name));
  }
  auto lo = bound(s, "minLength", path, 0);
  if (!lo.ok()) return lo.status();
  auto hi = bound(s, "maxLength", path, -1);
  if (!hi.ok()) return hi.status();
  if (*hi >= 0 && *hi < *lo) return error(path, "'maxLength' is below 'minLength'");
  if (*lo == 0 && *hi < 0) return use("json-string");
  return quote + " " + repeat(use("json-char"), *lo, *hi) + " " + quote;
}

Expected<std::string> SchemaConverter::visit_number(const json& s, const std::string& path, bool integer) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}));
  NumberBounds b;
  auto read = [&](const char* key, std::optional<double>& out) -> Status {
    if (!s.contains(key)) return Status::Ok();
    if (!s[key].is_number()) return error(path, std::string("'") + key + "' must be a number");
    out = s[key].get<double>();
    return Status::Ok();
  };
  STRIDE_RETURN_IF_ERROR(read("minimum", b.minimum));
  STRIDE_RETURN_IF_ERROR(read("maximum", b.maximum));
  STRIDE_RETURN_IF_ERROR(read("exclusiveMinimum", b.exclusive_minimum));
  STRIDE_RETURN_IF_ERROR(read("exclusiveMaximum", b.exclusive_maximum));
  if (!b.any()) return use(integer ? "json-int" : "json-number");
  auto g = bounded_number_gbnf(b, integer);
  if (!g.ok()) return error(path, g.status().message());
  return *g;
}

Expected<std::string> json_schema_to_gbnf(const json& schema, const SchemaOptions& opts) {
  try {
    return SchemaConverter(schema, opts).run();
  } catch (const std::exception& e) {  // nlohmann type errors on malformed schemas
    return InvalidArgument(std::string("schema: ") + e.what());
  }
}

namespace {
// Paths as SchemaConverter writes them (names unescaped, "/" joined).
void collect_order(const nlohmann::ordered_json& node, const std::string& path, int depth,
                   std::map<std::string, std::vector<std::string>>& out) {
  if (depth > 256) return;
  if (node.is_object()) {
    if (auto it = node.find("properties"); it != node.end() && it->is_object()) {
      std::vector<std::string>& keys = out[path];
      for (const auto& [k, v] : it->items()) keys.push_back(k);
    }
    for (const auto& [k, v] : node.items()) collect_order(v, path + "/" + k, depth + 1, out);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) collect_order(node[i], path + "/" + std::to_string(i), depth + 1, out);
  }
}
}  // namespace

std::map<std::string, std::vector<std::string>> property_order_of(const nlohmann::ordered_json& schema) {
  std::map<std::string, std::vector<std::string>> out;
  collect_order(schema, "", 0, out);
  return out;
}

std::string json_object_gbnf() {
  std::string out = "root ::= json-object\n";
  for (const char* r : {"ws", "json-char", "json-string", "json-int", "json-number", "json-boolean", "json-null",
                        "json-value", "json-object", "json-array"}) {
    out += std::string(r) + " ::= " + primitives().at(r) + "\n";
  }
  return out;
}

}  // namespace stride::grammar

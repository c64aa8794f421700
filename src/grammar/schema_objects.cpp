// Objects and allOf for the JSON-schema converter (schema_converter.h).
#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/schema_converter.h"

namespace stride::grammar {

using json = nlohmann::json;

Expected<std::string> SchemaConverter::visit_all_of(const json& s, const std::string& path, int depth) {
  const json& list = s["allOf"];
  if (!list.is_array() || list.empty()) return error(path, "'allOf' must be a non-empty array");
  std::vector<const json*> parts;
  json top = json::object();
  for (const auto& [k, v] : s.items())
    if (k != "allOf" && k != "type") top[k] = v;
  if (top.contains("properties") || top.contains("required") || top.contains("additionalProperties"))
    parts.push_back(&top);
  for (size_t k = 0; k < list.size(); ++k) {
    const json* part = &list[k];
    for (int hops = 0; part->is_object() && part->contains("$ref") && hops < 8; ++hops) {
      const json& r = (*part)["$ref"];
      if (!r.is_string() || r.get<std::string>().empty() || r.get<std::string>()[0] != '#') break;
      try {
        const json::json_pointer ptr(r.get<std::string>().substr(1));
        if (!root_.contains(ptr)) break;
        part = &root_.at(ptr);
      } catch (const std::exception&) {
        break;
      }
    }
    const bool object_like = part->is_object() && (part->contains("properties") || part->value("type", json()) == "object");
    if (!object_like) return error(path, "'allOf' is supported only for object schemas");
    parts.push_back(part);
  }
  json props = json::object();
  json required = json::array();
  std::optional<std::set<std::string>> allowed;  // nullopt: any key
  for (const json* part : parts) {
    STRIDE_RETURN_IF_ERROR(check_keywords(*part, path + "/allOf", {"type", "properties", "required",
                                                                    "additionalProperties", "$ref"}));
    const json pp = part->value("properties", json::object());
    if (!pp.is_object()) return error(path, "'properties' must be an object");
    for (const auto& [name, sub] : pp.items()) {
      if (props.contains(name) && props[name] != sub) {
        return error(path, "allOf: the property '" + name + "' is described by more than one part");
      }
      props[name] = sub;
    }
    if (part->contains("required") && (*part)["required"].is_array())
      for (const json& r : (*part)["required"]) required.push_back(r);
    if (part->contains("additionalProperties")) {
      const json& ap = (*part)["additionalProperties"];
      if (!ap.is_boolean()) return error(path, "allOf: a part's additionalProperties schema is not supported");
      if (!ap.get<bool>()) {
        std::set<std::string> own;
        for (const auto& [name, sub] : pp.items()) own.insert(name);
        if (allowed) {
          std::set<std::string> both;
          for (const std::string& n : *allowed)
            if (own.count(n)) both.insert(n);
          allowed = both;
        } else {
          allowed = own;
        }
      }
    }
  }
  json merged = {{"type", "object"}, {"properties", json::object()}, {"required", required}};
  for (const auto& [name, sub] : props.items())
    if (!allowed || allowed->count(name)) merged["properties"][name] = sub;
  for (const json& r : required) {
    if (r.is_string() && !merged["properties"].contains(r.get<std::string>())) {
      return error(path, "allOf: no object satisfies every part ('" + r.get<std::string>() +
                             "' is required, but a part does not allow it)");
    }
  }
  if (allowed) merged["additionalProperties"] = false;
  return visit_object(merged, path, depth + 1);
}

Expected<std::string> SchemaConverter::visit_object(const json& s, const std::string& path, int depth) {
  STRIDE_RETURN_IF_ERROR(check_keywords(s, path, {"type", "properties", "required", "additionalProperties"}));
  const json props = s.value("properties", json::object());
  if (!props.is_object()) return error(path, "'properties' must be an object");
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return error(path, "'required' must be an array of strings");
    for (const json& r : s["required"]) {
      if (!r.is_string()) return error(path, "'required' must be an array of strings");
      if (!props.contains(r.get<std::string>())) {
        return error(path, "'" + r.get<std::string>() + "' is required but not among 'properties'");
      }
      required.insert(r.get<std::string>());
    }
  }
  const std::string ws = use("ws");
  // Properties are written in the order the client wrote them (when known,
  // SchemaOptions::property_order; else sorted); required ones always,
  // optional ones when the model wants.
  std::vector<std::string> names;
  if (auto it = opts_.property_order.find(path); it != opts_.property_order.end()) {
    for (const std::string& n : it->second)
      if (props.contains(n) && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  for (const auto& [name, sub] : props.items())
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::vector<std::string> kvs;
  std::vector<bool> is_required;
  for (const std::string& name : names) {
    const json& sub = props[name];
    auto value = visit(sub, path + "/properties/" + name, depth + 1);
    if (!value.ok()) return value.status();
    kvs.push_back(gbnf_literal(json(name).dump()) + " " + ws + " \":\" " + ws + " " + *value);
    is_required.push_back(required.count(name) > 0);
  }
  std::string extra;  // a "key": value pair beyond the listed ones
  if (s.contains("additionalProperties")) {
    const json& ap = s["additionalProperties"];
    if (!(ap.is_boolean() && !ap.get<bool>())) {
      auto value = visit(ap, path + "/additionalProperties", depth + 1);
      if (!value.ok()) return value.status();
      auto r = add_rule(use("json-string") + " " + ws + " \":\" " + ws + " " + *value);
      if (!r.ok()) return r.status();
      extra = *r;
    }
  }
  const std::string comma = ws + " \",\" " + ws + " ";
  if (!required.empty()) {
    // Optional ones before the first required carry their comma after them.
    std::string body;
    bool seen_required = false;
    for (size_t k = 0; k < kvs.size(); ++k) {
      if (!seen_required) {
        if (is_required[k]) {
          body += " " + kvs[k];
          seen_required = true;
        } else {
          body += " ( " + kvs[k] + " " + comma + ")?";
        }
      } else {
        body += is_required[k] ? " " + comma + kvs[k] : " ( " + comma + kvs[k] + " )?";
      }
    }
    if (!extra.empty()) body += " ( " + comma + extra + " )*";
    return "\"{\" " + ws + body + " " + ws + " \"}\"";
  }
  const std::vector<std::string>& opt = kvs;
  // No required property: any ordered subset, the first without a comma.
  // first_k ::= kv_k tail_(k+1) | first_(k+1);  tail_k ::= ( , kv_k )? tail_(k+1)
  const std::string extra_tail = extra.empty() ? "" : " ( " + comma + extra + " )*";
  std::string tail = extra_tail.empty() ? "\"\"" : extra_tail;
  std::string first = extra.empty() ? "" : extra + extra_tail;
  for (size_t k = opt.size(); k-- > 0;) {
    const std::string alt = opt[k] + " " + tail;
    first = first.empty() ? alt : alt + " | " + first;
    auto fr = add_rule(first);
    if (!fr.ok()) return fr.status();
    first = *fr;
    auto tr = add_rule("( " + comma + opt[k] + " )? " + tail);
    if (!tr.ok()) return tr.status();
    tail = *tr;
  }
  if (first.empty()) return "\"{\" " + ws + " \"}\"";
  return "\"{\" " + ws + " ( " + first + " " + ws + " )? \"}\"";
}

}  // namespace stride::grammar

#pragma once
// The JSON-schema converter behind json_schema_to_gbnf(): json_schema.cpp
// holds the dispatch, strings, numbers, arrays and references,
// schema_objects.cpp objects and allOf. Internal to grammar/.
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>

#include "core/status.h"
#include "grammar/gbnf_text.h"
#include "grammar/json_schema.h"

namespace stride::grammar {

// Keywords that only describe (never constrain).
const std::set<std::string>& schema_annotations();

class SchemaConverter {
 public:
  using json = nlohmann::json;
  SchemaConverter(const json& root, const SchemaOptions& opts) : root_(root), opts_(opts) {}
  // The grammar text (start rule `root`).
  Expected<std::string> run();

 private:
  Status error(const std::string& path, const std::string& what) const;
  std::string use(const std::string& primitive);
  Expected<std::string> add_rule(const std::string& body);
  // Refuses (strict) or ignores a keyword stride cannot express.
  Status unsupported(const std::string& path, const std::string& keyword) const;
  Status check_keywords(const json& s, const std::string& path, const std::set<std::string>& allowed) const;
  Expected<int> bound(const json& s, const char* key, const std::string& path, int fallback) const;
  static std::string repeat(const std::string& item, int lo, int hi);
  Expected<std::string> visit(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_type_list(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_ref(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_any_of(const json& s, const char* key, const std::string& path, int depth);
  // allOf of object schemas (or references to them), with the top level's
  // own object keywords as one more part: required names add up; a part with
  // additionalProperties false admits only its own properties; a property
  // may be described by one part only (or identically by several).
  Expected<std::string> visit_all_of(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_object(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_array(const json& s, const std::string& path, int depth);
  Expected<std::string> visit_string(const json& s, const std::string& path);
  Expected<std::string> visit_number(const json& s, const std::string& path, bool integer);
  Expected<std::string> literal_of(const json& v) const { return gbnf_literal(v.dump()); }

  const json& root_;
  const SchemaOptions& opts_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> refs_;
};

}  // namespace stride::grammar

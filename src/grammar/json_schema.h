#pragma once
// JSON Schema -> GBNF, for response_format json_schema / json_object (see
// docs/serving.md, "Structured output", for what each keyword becomes).
//
// Every sentence of the grammar is a JSON text that the schema accepts,
// except where the documented approximations say otherwise (oneOf is treated
// as anyOf; a key of additionalProperties may repeat a listed one). Where a
// keyword cannot be expressed, strict mode refuses the schema naming the
// keyword and its JSON pointer; otherwise the keyword is ignored.
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace stride::grammar {

struct SchemaOptions {
  bool strict = false;
  int max_bound = 1000;      // minLength/maxLength/minItems/maxItems above this are refused
  size_t max_rules = 5000;   // generated rules
  int max_depth = 128;       // schema nesting, $ref hops included
  // For each schema (by its path from the root, "/properties/a/items"; "" is
  // the root) whose "properties" the client wrote in some order, that order:
  // nlohmann::json keeps keys sorted, so the order is read from the text.
  std::map<std::string, std::vector<std::string>> property_order;
};

// The property_order of a schema parsed with its key order kept.
std::map<std::string, std::vector<std::string>> property_order_of(const nlohmann::ordered_json& schema);

Expected<std::string> json_schema_to_gbnf(const nlohmann::json& schema, const SchemaOptions& opts = {});

// Any JSON object ({"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace stride::grammar

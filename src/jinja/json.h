#pragma once
// nlohmann::json <-> template values, and Python's json.dumps (what
// transformers' `tojson` filter calls).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/value.h"

namespace stride::jinja {

// `client`: every string (and dict key) is client text, see str.h.
// Ordered JSON keeps the key order Python dicts would have.
Value from_json(const nlohmann::ordered_json& j, bool client);
Value from_json(const nlohmann::json& j, bool client);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // None: one line; else the indent unit
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator = ", ";  // json.dumps: ',' when an indent is given
  std::string key_separator = ": ";
};
// Fails (JinjaError) on values JSON cannot hold: undefined, functions, generators.
std::string dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace stride::jinja

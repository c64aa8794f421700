#include "http/json_fields.h"

#include <cmath>

#include "serving/generation_checks.h"

namespace stride::server {

using json = nlohmann::json;

ApiError bad_field(const std::string& param, const std::string& message, const std::string& code) {
  return {400, message, param, code};
}

int json_nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

ApiError parse_json_object(std::string_view body, json& out, int max_depth) {
  if (json_nesting_depth(body, max_depth) > max_depth) {
    return bad_field("", "the JSON body nests deeper than " + std::to_string(max_depth) + " levels", "invalid_json");
  }
  out = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return bad_field("", "malformed JSON body", "invalid_json");
  if (!out.is_object()) return bad_field("", "the request body must be a JSON object", "invalid_json");
  return {};
}

bool is_json_integer(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double x = v.get<double>();
  return std::isfinite(x) && std::trunc(x) == x;
}

std::optional<int64_t> json_int64(const json& v) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > (uint64_t)INT64_MAX) return std::nullopt;
    return (int64_t)v.get<uint64_t>();
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!is_json_integer(v)) return std::nullopt;
  // 2^63 is the first double beyond int64.
  const double x = v.get<double>();
  if (x < -9223372036854775808.0 || x >= 9223372036854775808.0) return std::nullopt;
  return (int64_t)x;
}

const json* Fields::find(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError Fields::type_error(const char* key, const char* expected) const {
  return bad_field(key, std::string("'") + key + "' must be " + expected);
}

ApiError Fields::opt_bool(const char* key, bool& out) const {
  const json* v = find(key);
  if (!v) return {};
  if (!v->is_boolean()) return type_error(key, "a boolean");
  out = v->get<bool>();
  return {};
}

ApiError Fields::opt_int(const char* key, int64_t lo, int64_t hi, int64_t& out) const {
  const json* v = find(key);
  if (!v) return {};
  if (!is_json_integer(*v)) return type_error(key, "an integer");
  const std::string range = serving::int_range_text(lo, hi);
  const std::optional<int64_t> x = json_int64(*v);
  if (!x || *x < lo || *x > hi) return type_error(key, range.c_str());
  out = *x;
  return {};
}

ApiError Fields::opt_number(const char* key, double lo, double hi, float& out, bool lo_open) const {
  const json* v = find(key);
  if (!v) return {};
  if (!v->is_number()) return type_error(key, "a number");
  const double x = v->get<double>();
  const bool below = lo_open ? !(x > lo) : !(x >= lo);
  if (!std::isfinite(x) || below || x > hi) return type_error(key, serving::number_range_text(lo, hi, lo_open).c_str());
  out = (float)x;
  return {};
}

ApiError Fields::opt_string(const char* key, size_t max_bytes, std::string& out) const {
  const json* v = find(key);
  if (!v) return {};
  if (!v->is_string()) return type_error(key, "a string");
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    return bad_field(key, std::string("'") + key + "' is longer than " + std::to_string(max_bytes) + " bytes");
  }
  out = s;
  return {};
}

}  // namespace stride::server

#pragma once
// Typed reads of request fields. Every byte from the network is hostile: a
// wrong type, an out-of-range or non-finite number, an oversized string or
// array, or nesting that is too deep becomes an ApiError that names the field
// (OpenAI's `param`), never an exception and never a silent truncation.
#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stride::server {

// An API-level failure: HTTP status plus OpenAI's error fields.
struct ApiError {
  int status = 0;  // 0: no error
  std::string message;
  std::string param;
  std::string code;
  bool ok() const { return status == 0; }
};

ApiError bad_field(const std::string& param, const std::string& message, const std::string& code = "");

// Returns from the enclosing function with the ApiError of `expr` when it is one.
#define STRIDE_API_TRY(expr)           \
  do {                                 \
    ::stride::server::ApiError _e = (expr); \
    if (!_e.ok()) return _e;           \
  } while (0)

// Deepest array/object nesting a request may have: far beyond what any real
// request needs, far below what would exhaust a thread's stack.
constexpr int kMaxJsonDepth = 64;

// Checks nesting depth with a linear scan (no recursion) and then parses.
// Malformed JSON, too deep a body or a non-object top level are 400s.
ApiError parse_json_object(std::string_view body, nlohmann::json& out, int max_depth = kMaxJsonDepth);
// Nesting depth of a JSON text (string contents ignored); stops counting past `limit`.
int json_nesting_depth(std::string_view text, int limit);

// JSON Schema's integer: an integer, or a number with no fractional part
// (1.0 is an integer, 1.5 is not).
bool is_json_integer(const nlohmann::json& v);
// Its value when it is one and fits in int64 (nullopt: not an integer, or out of range).
std::optional<int64_t> json_int64(const nlohmann::json& v);

// Optional fields of one JSON object; absent and null both leave `out` as it is.
class Fields {
 public:
  explicit Fields(const nlohmann::json& obj) : obj_(obj) {}

  // The value, or null when absent or JSON null.
  const nlohmann::json* find(const char* key) const;

  ApiError opt_bool(const char* key, bool& out) const;
  // Integers only (3.0 counts as 3, as in JSON Schema; 3.5 and "3" are type errors), checked against [lo, hi]
  // before narrowing, so 4294967297 is out of range rather than 1.
  ApiError opt_int(const char* key, int64_t lo, int64_t hi, int64_t& out) const;
  template <typename T>
  ApiError opt_int(const char* key, int64_t lo, int64_t hi, T& out) const {
    int64_t v = (int64_t)out;
    ApiError e = opt_int(key, lo, hi, v);
    if (e.ok()) out = (T)v;
    return e;
  }
  // Finite numbers in [lo, hi] (or (lo, hi] when lo_open).
  ApiError opt_number(const char* key, double lo, double hi, float& out, bool lo_open = false) const;
  ApiError opt_string(const char* key, size_t max_bytes, std::string& out) const;
  // Present and not null, but of no type the caller accepts.
  ApiError type_error(const char* key, const char* expected) const;

 private:
  const nlohmann::json& obj_;
};

}  // namespace stride::server

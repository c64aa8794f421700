#include "attention/policy_args.h"

#include <charconv>
#include <string>

namespace stride::policy_args {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Expected<std::vector<KeyValue>> split_args(std::string_view kind, std::string_view args) {
  std::vector<KeyValue> out;
  while (!args.empty()) {
    const size_t comma = args.find(',');
    const std::string_view item = trim(args.substr(0, comma));
    args = comma == std::string_view::npos ? std::string_view{} : args.substr(comma + 1);
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos)
      return InvalidArgument("policy '" + std::string(kind) + "': expected key=value, got '" +
                             std::string(item) + "'");
    const KeyValue kv{trim(item.substr(0, eq)), trim(item.substr(eq + 1))};
    for (const auto& prev : out)
      if (prev.key == kv.key)
        return InvalidArgument("policy '" + std::string(kind) + "': key '" + std::string(kv.key) +
                               "' given twice");
    out.push_back(kv);
  }
  return out;
}

Expected<int64_t> parse_positive(std::string_view kind, const KeyValue& kv) {
  int64_t v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end)
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be an integer, got '" + std::string(kv.value) + "'");
  if (v <= 0)
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be positive, got " + std::to_string(v));
  return v;
}

Status unknown_key(std::string_view kind, const KeyValue& kv, const char* allowed) {
  return InvalidArgument("policy '" + std::string(kind) + "': unknown key '" +
                         std::string(kv.key) + "' (allowed: " + allowed + ")");
}

Expected<double> parse_fraction(std::string_view kind, const KeyValue& kv) {
  double v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end || !(v >= 0.0 && v < 1.0))
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be a number in [0, 1), got '" + std::string(kv.value) + "'");
  return v;
}

Expected<double> parse_factor(std::string_view kind, const KeyValue& kv) {
  double v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end || !(v >= 1.0 && v <= 1e6))
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be a number >= 1, got '" + std::string(kv.value) + "'");
  return v;
}

}  // namespace stride::policy_args

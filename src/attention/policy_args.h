#pragma once
// The policy grammar's argument list: comma-separated key=value items, and
// the value parsers every policy kind shares (attention/policy.cpp,
// attention/topk_policy_parse.cpp).
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stride::policy_args {

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

std::string_view trim(std::string_view s);
// "a=1, b=2" -> {a,1},{b,2}; a key given twice is an error.
Expected<std::vector<KeyValue>> split_args(std::string_view kind, std::string_view args);
Expected<int64_t> parse_positive(std::string_view kind, const KeyValue& kv);
// In [0, 1).
Expected<double> parse_fraction(std::string_view kind, const KeyValue& kv);
// In [1, 1e6].
Expected<double> parse_factor(std::string_view kind, const KeyValue& kv);
Status unknown_key(std::string_view kind, const KeyValue& kv, const char* allowed);

}  // namespace stride::policy_args

#pragma once
// Access control: bearer API keys (constant-time comparison) and a CIDR allowlist.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace stride::server {

// Index of the key `given` equals, or -1. Every key is compared in full, so the
// time does not depend on where a mismatch starts nor on which key matched.
int match_api_key(const std::string& given, const std::vector<std::string>& keys);

// "Bearer <token>" -> token ("" when the header is missing or malformed).
std::string bearer_token(const std::string& authorization);

struct Cidr {
  bool v6 = false;
  uint8_t addr[16] = {};
  int prefix = 0;
};

Expected<Cidr> parse_cidr(const std::string& text);  // "10.0.0.0/8", "::1/128", "1.2.3.4"
bool ip_allowed(const std::string& ip, const std::vector<Cidr>& allowlist);  // empty list: everyone
bool is_loopback_host(const std::string& host);

}  // namespace stride::server

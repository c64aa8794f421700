#include "http/access.h"

#include <arpa/inet.h>

#include <cstring>

namespace stride::server {

namespace {

// Compares two strings in time that depends only on their lengths.
bool equal_constant_time(const std::string& a, const std::string& b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? (unsigned char)a[i] : 0;
    const unsigned char y = i < b.size() ? (unsigned char)b[i] : 0;
    diff |= (unsigned)(x ^ y);
  }
  return diff == 0;
}

// IPv4 addresses become v4-mapped IPv6 so one comparison serves both.
bool parse_ip(const std::string& text, uint8_t out[16], bool& v6) {
  in_addr a4;
  if (::inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    std::memset(out, 0, 16);
    out[10] = out[11] = 0xff;
    std::memcpy(out + 12, &a4, 4);
    v6 = false;
    return true;
  }
  in6_addr a6;
  if (::inet_pton(AF_INET6, text.c_str(), &a6) == 1) {
    std::memcpy(out, &a6, 16);
    v6 = true;
    // A v4-mapped address (::ffff:1.2.3.4) matches IPv4 rules.
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(out, mapped, 12) == 0) v6 = false;
    return true;
  }
  return false;
}

}  // namespace

int match_api_key(const std::string& given, const std::vector<std::string>& keys) {
  int found = -1;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (equal_constant_time(given, keys[i]) && found < 0) found = (int)i;
  }
  return found;
}

std::string bearer_token(const std::string& h) {
  static const std::string prefix = "Bearer ";
  if (h.size() <= prefix.size() || h.compare(0, prefix.size(), prefix) != 0) return {};
  return h.substr(prefix.size());
}

Expected<Cidr> parse_cidr(const std::string& text) {
  Cidr c;
  const size_t slash = text.find('/');
  const std::string ip = text.substr(0, slash);
  if (!parse_ip(ip, c.addr, c.v6)) return InvalidArgument("allowlist: bad address '" + text + "'");
  const int max_prefix = c.v6 ? 128 : 32;
  c.prefix = max_prefix;
  if (slash != std::string::npos) {
    const std::string p = text.substr(slash + 1);
    if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("allowlist: bad prefix in '" + text + "'");
    }
    c.prefix = std::stoi(p);
    if (c.prefix > max_prefix) return InvalidArgument("allowlist: prefix too long in '" + text + "'");
  }
  if (!c.v6) c.prefix += 96;  // over the v4-mapped form
  return c;
}

bool ip_allowed(const std::string& ip, const std::vector<Cidr>& allowlist) {
  if (allowlist.empty()) return true;
  uint8_t a[16];
  bool v6 = false;
  if (!parse_ip(ip, a, v6)) return false;
  for (const Cidr& c : allowlist) {
    if (c.v6 != v6) continue;
    bool ok = true;
    for (int bit = 0; bit < c.prefix && ok; ++bit) {
      const int byte = bit / 8, mask = 0x80 >> (bit % 8);
      ok = (a[byte] & mask) == (c.addr[byte] & mask);
    }
    if (ok) return true;
  }
  return false;
}

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost" || host.rfind("127.", 0) == 0;
}

}  // namespace stride::server

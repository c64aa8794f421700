#include "redis/redis_url.h"

#include <cctype>
#include <charconv>

namespace stride {

namespace {

// A decimal in [lo, hi] written with digits only.
bool parse_int(std::string_view s, int lo, int hi, int& out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

}  // namespace

std::string RedisAddress::display() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Expected<RedisAddress> parse_redis_url(const std::string& url) {
  auto fail = [&](const std::string& why) {
    return InvalidArgument("kv_shared_tier: " + why + " (expected redis://[:password@]host:port[/db])");
  };
  constexpr std::string_view kScheme = "redis://";
  std::string_view rest(url);
  if (rest.substr(0, kScheme.size()) != kScheme) return fail("the URL must start with redis://");
  rest.remove_prefix(kScheme.size());
  RedisAddress a;
  // The password may hold '@' or '/': the last '@' ends the user info.
  const size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view info = rest.substr(0, at);
    const size_t colon = info.find(':');
    if (colon == std::string_view::npos) return fail("user info must be [user]:password");
    a.user = std::string(info.substr(0, colon));
    a.password = std::string(info.substr(colon + 1));
    if (a.password.empty()) return fail("empty password");
    rest.remove_prefix(at + 1);
  }
  std::string_view hostport = rest;
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && !parse_int(db, 0, 1 << 20, a.db)) return fail("the database must be a number");
  }
  std::string_view port;
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return fail("unclosed [ in the host");
    a.host = std::string(hostport.substr(1, close - 1));
    for (char c : a.host)
      if (!(std::isxdigit((unsigned char)c) || c == ':' || c == '.')) return fail("bad IPv6 address");
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail("junk after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) return fail("empty port");
    }
  } else {
    const size_t colon = hostport.find(':');
    a.host = std::string(hostport.substr(0, colon));
    for (char c : a.host)
      if (!host_char(c)) return fail("bad character in the host");
    if (colon != std::string_view::npos) {
      port = hostport.substr(colon + 1);
      if (port.empty()) return fail("empty port");
    }
  }
  if (a.host.empty()) return fail("no host");
  if (!port.empty() && !parse_int(port, 1, 65535, a.port)) return fail("the port must be 1-65535");
  return a;
}

}  // namespace stride

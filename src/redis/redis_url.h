#pragma once
// The address of the shared KV tier: redis://[[user]:password@]host[:port][/db]
// (host: a name, an IPv4 address or [an IPv6 address]; port 6379 and db 0
// when left out). The password is taken as written (no percent-decoding).
#include <string>

#include "core/status.h"

namespace stride {

struct RedisAddress {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;      // empty: AUTH with the password alone
  std::string password;  // empty: no AUTH

  // host:port/db, never the password (for logs).
  std::string display() const;
};

Expected<RedisAddress> parse_redis_url(const std::string& url);

}  // namespace stride

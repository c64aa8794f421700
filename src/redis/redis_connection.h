#pragma once
// One blocking connection to Redis (hiredis) with connect and I/O timeouts:
// every read and write of the socket gives up after the I/O timeout, so a
// Redis that stops answering costs at most that long per call. After any
// error the connection is dead; the owner opens a new one.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "redis/redis_url.h"

struct redisContext;
struct redisReply;

namespace stride {

struct RedisReplyFree {
  void operator()(redisReply* r) const;
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyFree>;

class RedisConnection {
 public:
  // Connects, then AUTH and SELECT as the address says.
  static Expected<std::unique_ptr<RedisConnection>> open(const RedisAddress& address,
                                                         std::chrono::milliseconds connect_timeout,
                                                         std::chrono::milliseconds io_timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  using Command = std::vector<std::string_view>;
  // Sends every command, then reads their replies in order. A Redis error
  // reply is returned as a reply; a broken connection or a timeout is an
  // IoError (the connection is then dead).
  Expected<std::vector<RedisReply>> pipeline(const std::vector<Command>& commands);

 private:
  explicit RedisConnection(redisContext* ctx) : ctx_(ctx) {}
  redisContext* ctx_ = nullptr;
};

// The text of an error or status reply ("" for other kinds).
std::string redis_reply_text(const redisReply& r);
bool redis_reply_is_error(const redisReply& r);

}  // namespace stride

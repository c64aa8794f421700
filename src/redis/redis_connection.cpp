#include "redis/redis_connection.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

namespace stride {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = (time_t)(ms.count() / 1000);
  tv.tv_usec = (suseconds_t)(ms.count() % 1000 * 1000);
  return tv;
}

}  // namespace

void RedisReplyFree::operator()(redisReply* r) const { freeReplyObject(r); }

std::string redis_reply_text(const redisReply& r) {
  if ((r.type == REDIS_REPLY_ERROR || r.type == REDIS_REPLY_STATUS) && r.str) return std::string(r.str, r.len);
  return {};
}

bool redis_reply_is_error(const redisReply& r) { return r.type == REDIS_REPLY_ERROR; }

Expected<std::unique_ptr<RedisConnection>> RedisConnection::open(const RedisAddress& address,
                                                                 std::chrono::milliseconds connect_timeout,
                                                                 std::chrono::milliseconds io_timeout) {
  redisContext* ctx = redisConnectWithTimeout(address.host.c_str(), address.port, to_timeval(connect_timeout));
  if (!ctx) return ResourceExhausted("redis: out of memory");
  std::unique_ptr<RedisConnection> conn(new RedisConnection(ctx));
  if (ctx->err) return IoError("redis " + address.display() + ": " + ctx->errstr);
  if (redisSetTimeout(ctx, to_timeval(io_timeout)) != REDIS_OK)
    return IoError("redis " + address.display() + ": cannot set the timeout");
  std::vector<Command> setup;
  if (!address.password.empty()) {
    if (address.user.empty()) setup.push_back({"AUTH", address.password});
    else setup.push_back({"AUTH", address.user, address.password});
  }
  const std::string db = std::to_string(address.db);
  if (address.db != 0) setup.push_back({"SELECT", db});
  if (!setup.empty()) {
    STRIDE_ASSIGN_OR_RETURN(std::vector<RedisReply> replies, conn->pipeline(setup));
    for (const RedisReply& r : replies)
      if (redis_reply_is_error(*r)) return IoError("redis " + address.display() + ": " + redis_reply_text(*r));
  }
  return conn;
}

RedisConnection::~RedisConnection() {
  if (ctx_) redisFree(ctx_);
}

Expected<std::vector<RedisReply>> RedisConnection::pipeline(const std::vector<Command>& commands) {
  if (ctx_->err) return IoError(std::string("redis: ") + ctx_->errstr);
  for (const Command& cmd : commands) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (std::string_view a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, (int)argv.size(), argv.data(), lens.data()) != REDIS_OK)
      return IoError(std::string("redis: ") + ctx_->errstr);
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(ctx_, &reply) != REDIS_OK || !reply)
      return IoError(std::string("redis: ") + (ctx_->err ? ctx_->errstr : "no reply"));
    replies.emplace_back((redisReply*)reply);
  }
  return replies;
}

}  // namespace stride

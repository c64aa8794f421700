#include "cli/serve_shared_tier.h"

#include "cli/cli_common.h"
#include "redis/redis_tier.h"
#include "redis/redis_url.h"
#include "http/log.h"

namespace stride::cli {

Status attach_shared_tier(const serving::ServeConfig& cfg, Engine& engine) {
  using server::LogLevel;
  if (cfg.kv_shared_tier.empty()) return Status::Ok();
  if (!redis_tier_built()) {
    server::log(LogLevel::Error,
                "kv_shared_tier is set but this build has no Redis client (install libhiredis-dev and rebuild); "
                "serving without the shared KV tier");
    return Status::Ok();
  }
  RedisTierOptions o;
  STRIDE_ASSIGN_OR_RETURN(o.address, parse_redis_url(cfg.kv_shared_tier));
  o.lookup_timeout = std::chrono::milliseconds(cfg.kv_shared_tier_timeout_ms);
  o.ttl_seconds = cfg.kv_shared_tier_ttl_s;
  STRIDE_ASSIGN_OR_RETURN(o.queue_bytes, parse_bytes(cfg.kv_shared_tier_queue));
  o.log = [](bool error, const std::string& message) {
    server::log(error ? LogLevel::Warning : LogLevel::Info, message);
  };
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<SharedPageStore> store, open_redis_tier(o));
  const std::string where = store->describe();
  STRIDE_RETURN_IF_ERROR(
      engine.kv().attach_shared_tier(std::move(store), cfg.kv_shared_tier_secret, cfg.kv_shared_tier_prefix));
  server::log(LogLevel::Info, "shared KV tier",
              {{"address", where},
               {"key_prefix", cfg.kv_shared_tier_prefix},
               {"ttl_s", std::to_string(cfg.kv_shared_tier_ttl_s)},
               {"lookup_timeout_ms", std::to_string(cfg.kv_shared_tier_timeout_ms)},
               {"queue", cfg.kv_shared_tier_queue}});
  return Status::Ok();
}

}  // namespace stride::cli

#pragma once
// The shared prefix-KV tier in Redis (kv/shared/shared_page_store.h).
//
// Lookups run on the caller's (the scheduler's) thread over their own
// connection: MGET in batches, each socket read bounded by lookup_timeout,
// and none at all while the tier is known down. Publishing is asynchronous:
// a background thread drains a bounded queue (values past queue_bytes are
// dropped and counted) with SET ... EX ttl, PINGs when idle so the `up`
// gauge follows Redis, and reconnects with exponential backoff. A slow or
// dead Redis therefore never stalls generation; replicas keep serving from
// their own cache and say so once in the log.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "kv/shared/shared_page_store.h"
#include "redis/redis_url.h"

namespace stride {

struct RedisTierOptions {
  RedisAddress address;
  std::chrono::milliseconds lookup_timeout{50};    // per socket read or write of a lookup
  std::chrono::milliseconds publish_timeout{1000};  // connect, PING and SET of the background thread
  int64_t ttl_seconds = 3600;                       // 0: keys live until Redis evicts them (maxmemory)
  int64_t queue_bytes = int64_t(64) << 20;          // values waiting to be written
  int lookup_batch = 8;                             // keys per MGET
  // Transitions up/down and rejected values (error: true for the down ones).
  std::function<void(bool error, const std::string& message)> log;
};

// Whether this build has the Redis client (hiredis).
bool redis_tier_built();

// Starts the tier (the background thread connects; a Redis that is down now
// is retried). Unsupported when built without hiredis.
Expected<std::unique_ptr<SharedPageStore>> open_redis_tier(const RedisTierOptions& options);

}  // namespace stride

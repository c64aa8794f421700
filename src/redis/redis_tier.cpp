// The factory of the Redis tier; without hiredis, the build says so.
#include "redis/redis_tier.h"

#ifdef STRIDE_WITH_HIREDIS
#include "redis/redis_page_store.h"
#endif

namespace stride {

bool redis_tier_built() {
#ifdef STRIDE_WITH_HIREDIS
  return true;
#else
  return false;
#endif
}

Expected<std::unique_ptr<SharedPageStore>> open_redis_tier(const RedisTierOptions& options) {
#ifdef STRIDE_WITH_HIREDIS
  return std::unique_ptr<SharedPageStore>(std::make_unique<RedisPageStore>(options));
#else
  (void)options;
  return Unsupported("kv_shared_tier: this build has no Redis client (install libhiredis-dev and rebuild)");
#endif
}

}  // namespace stride

#pragma once
// `stride serve` with kv_shared_tier: the Redis tier attached to an engine's
// KV manager, its settings logged at start.
#include "core/status.h"
#include "engine/engine.h"
#include "serving/config.h"

namespace stride::cli {

// Nothing when kv_shared_tier is empty. A build without hiredis logs an
// error and serves without the tier (the replica still works on its own).
Status attach_shared_tier(const serving::ServeConfig& cfg, Engine& engine);

}  // namespace stride::cli

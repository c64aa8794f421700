#pragma once
// A worker of `stride serve`'s shard set (a rank above 0): no HTTP and no
// requests of its own. It joins the newest generation of the set
// (shard_link.h), then runs what rank 0 sends over the control channel
// (shard_control.h): for each job its part of the sharded generation, its
// pages released after it. When the group breaks (rank 0 or another worker
// gone or stalled) it looks for the newest generation and joins again.
#include "core/status.h"
#include "dist/shard_group.h"
#include "engine/engine.h"

namespace stride::dist {

// Runs until the process is stopped; returns only for options no group can
// be built from (a rank of 0, a rendezvous that does not parse).
Status run_shard_worker(Engine& engine, const ShardGroupOptions& base);

}  // namespace stride::dist

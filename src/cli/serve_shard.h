#pragma once
// `stride serve --shard-world W --shard-rank R --rendezvous ADDR`: a server
// whose longest prompts are spread by position over a shard set. Rank 0 is
// the usual server (HTTP, scheduler) with the set's route in its scheduler
// (dist/shard_set_route.h); a rank above 0 is a worker without HTTP that
// runs what rank 0 sends it (dist/shard_worker.h). Gloo builds only.
#include "cli/serve_config.h"
#include "cli/serve_model_version.h"

namespace stride::cli {

// Options --shard-min-tokens and the shard set's (shard_options.h) on `cmd`.
void add_serve_shard_options(CLI::App& cmd, ServeArgs& a);

// Rank 0's route, for load_version; empty when the server has no shard set.
ShardRouteFactory shard_route_factory(const ServeArgs& a, const serving::ServeConfig& cfg, serving::Metrics& metrics);

// A worker: loads the configured model and serves rank 0 until killed.
int serve_shard_worker(const ServeArgs& a, const serving::ServeConfig& cfg, const server::ModelRef& ref);

}  // namespace stride::cli

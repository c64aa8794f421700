#pragma once
// `stride serve`: one model version, from its path to a warmed-up scheduler.
#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "serving/shard_route.h"

#include "http/served_model.h"
#include "serving/config.h"
#include "serving/metrics.h"

namespace stride::cli {

// Each stage logged: model path and version, sha256, weights + KV pool,
// kernels + warm-up. An encoder folder goes to load_encoder_version.
// The shard set's side of the scheduler, made for the version's engine (rank 0 of `stride serve --shard-world`).
using ShardRouteFactory = std::function<std::unique_ptr<serving::ShardRoute>(Engine&)>;

Expected<std::shared_ptr<server::ModelHandle>> load_version(const serving::ServeConfig& cfg, const server::ModelRef& ref,
                                                            serving::Metrics& metrics, const ShardRouteFactory& route = {});

// The engine the config describes; digest: the model file's sha256, which
// keys the prefix cache.
Expected<EngineOptions> serve_engine_options(const serving::ServeConfig& cfg, const std::string& path,
                                             const std::string& digest);
// Its weights and KV pool, with the shared KV tier attached.
Expected<std::unique_ptr<Engine>> load_serve_engine(const serving::ServeConfig& cfg, const EngineOptions& eo);

}  // namespace stride::cli

#pragma once
// `stride serve`: one model version, from its path to a warmed-up scheduler.
#include <memory>

#include "http/served_model.h"
#include "serving/config.h"
#include "serving/metrics.h"

namespace stride::cli {

// Each stage logged: model path and version, sha256, weights + KV pool,
// kernels + warm-up. An encoder folder goes to load_encoder_version.
Expected<std::shared_ptr<server::ModelHandle>> load_version(const serving::ServeConfig& cfg, const server::ModelRef& ref,
                                                            serving::Metrics& metrics);

}  // namespace stride::cli

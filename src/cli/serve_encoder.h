#pragma once
// `stride serve` for a BERT-style encoder folder (all-MiniLM-L6-v2): the
// weights, the WordPiece tokenizer and the encoder service that answers
// /v1/embeddings; no engine, KV pool or scheduler.
#include <memory>

#include "http/served_model.h"
#include "serving/config.h"
#include "serving/metrics.h"

namespace stride::cli {

Expected<std::shared_ptr<server::ModelHandle>> load_encoder_version(const serving::ServeConfig& cfg,
                                                                    const server::ModelRef& ref,
                                                                    serving::Metrics& metrics);

}  // namespace stride::cli

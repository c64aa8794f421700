#pragma once
// What a rank's prefill of positions [begin, end) costs, so a shard set can
// cut a prompt where every rank does about the same work (shard_layout.h),
// and what its part of a decode step costs, to compare cuts (stride plan).
// A token pays its matmuls (the same at every position) and, on each layer,
// one unit per key its query reads: every earlier key under dense and top-k
// with prefill=dense, at most window (+ sinks) under a window or R-SWA. With
// a contiguous cut the last rank's queries read the most keys, so an equal
// number of tokens leaves it the most work.
//
// Costs are whole numbers (key reads on one layer), so every rank computes
// the same cut bit for bit.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "attention/policy.h"
#include "loader/model_config.h"

namespace stride {

struct ShardCostModel {
  // A token's matmuls over every layer, in key reads on one layer.
  int64_t token_cost = 0;
  // (horizon, layers): how many layers read at most `horizon` keys per query
  // (0: every earlier key).
  std::vector<std::pair<int64_t, int>> horizons;
};

// What a decode step costs each rank, in decode key reads on one layer.
struct DecodeCostModel {
  // A decoded token's matmuls over every layer: one token's matmuls read
  // every weight for it, so they weigh less against a key read than a
  // prefill chunk's.
  int64_t token_cost = 0;
  // How many layers a decode query reads the sinks and the last `window` keys
  // of (window 0: every earlier key; top-k counted so, its pages picked at the step).
  struct Reads {
    int64_t window = 0;
    int64_t sinks = 0;
    int layers = 0;
  };
  std::vector<Reads> reads;
};

// The model's cost: matmul multiply-adds per token against the attention's
// per key read, the latter weighted by kAttentionFlopWeight.
ShardCostModel shard_cost_model(const ModelConfig& config, std::span<const PolicySpec> layers);

// The model's decode cost, weighted by kDecodeAttentionFlopWeight.
DecodeCostModel decode_cost_model(const ModelConfig& config, std::span<const PolicySpec> layers);

// The most uneven cut any model gives a prompt: attention only, dense. It
// bounds the largest shard before the model is loaded (pool sizing).
ShardCostModel steepest_shard_cost();

// The most keys a query of this layer reads (0: every earlier key).
int64_t key_horizon(const PolicySpec& p);

// The prefill cost of positions [begin, end) under the model.
int64_t shard_prefill_cost(const ShardCostModel& cost, int64_t begin, int64_t end);

// A decode step's cost, the query at position n, to the rank holding prompt
// positions [begin, end): one unit per key of its own the query reads on each
// layer (all under dense, the sinks and the window's under a window or
// R-SWA), and the token's matmuls on the rank that keeps the generated tokens.
int64_t shard_decode_cost(const DecodeCostModel& cost, int64_t begin, int64_t end, int64_t n, bool keeps_tokens);

}  // namespace stride

#pragma once
// `stride run --shard-world N`: this process is one rank of a shard set that
// generates from one prompt spread by position over the ranks
// (dist/shard_generate.h). Every rank streams the same text; with --json
// each ends with a JSON line of its tokens, log-probabilities and figures.
// On failure (a peer gone or timed out) it prints the error, and with --json
// a JSON line saying so and how many KV pages the rank still holds (none:
// the sequence is released).
#include <cstdint>
#include <vector>

#include "cli/shard_options.h"
#include "engine/engine.h"

namespace stride::cli {

// The tokens of KV a rank's pool needs for a prompt of at most
// max_prompt_tokens: the largest shard under shard_tokens (a resolved S) that
// any model's cut gives (largest_shard_tokens, kv/shard_layout.h), and the
// generated tokens (the last rank keeps them).
int64_t shard_kv_tokens(int64_t max_prompt_tokens, int world, int page_size, int max_tokens,
                        int64_t shard_tokens = 0);

int run_sharded(const ShardArgs& shard, Engine& engine, const std::vector<int32_t>& prompt,
                const GenerateOptions& g, bool json);

}  // namespace stride::cli

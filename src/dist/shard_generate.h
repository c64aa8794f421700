#pragma once
// Generation from a prompt sharded by position over a shard group (`stride
// run --shard-world`). Prefill as in scoring (shard_score.h): each rank runs
// its shard through every layer, the earlier shards' KV coming around the
// ring. The last rank, which holds the prompt's last position and so its
// logits, is the root of the decode: it samples each token, tells every rank
// (so each streams the same text), and runs it through the model, keeping
// its keys after its shard; at every layer the new query's partial attention
// is computed on every rank over the pages it holds and merged on the root
// by softmax state (decode_attention.h). A rank's pool holds its own shard
// (and on the root the generated tokens), never the whole sequence.
//
// A peer that dies or stalls fails the generation on every rank with the
// group's IoError; the rank's sequence is released either way.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/kv_shard.h"
#include "dist/shard_group.h"
#include "engine/engine.h"

namespace stride::dist {

struct ShardGeneration {
  KvShard shard;                  // this rank's prompt positions
  std::vector<int32_t> ids;       // generated tokens (every rank)
  std::vector<float> logprobs;    // [ids] each token's log-probability under the model (every rank)
  std::string text;
  FinishReason finish = FinishReason::Length;
  double prefill_seconds = 0;      // this rank's prefill step, wall time
  double prefill_cpu_seconds = 0;  // CPU time of this process in it (every thread)
  double decode_seconds = 0;
  double decode_cpu_seconds = 0;
  int64_t prefill_bytes_sent = 0;  // ShardGroup::payload_bytes_sent after the prefill
  int64_t payload_bytes_sent = 0;  // and at the end
};

// Every rank passes the same prompt (checked) and options; speculative
// decoding and top-k layers that select on prompt chunks are refused
// (shard_topk.h). on_text gets the text as it is
// decoded, on every rank.
Expected<ShardGeneration> generate_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts,
                                           const std::function<void(const std::string&)>& on_text);

}  // namespace stride::dist

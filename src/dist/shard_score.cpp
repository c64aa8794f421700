#include "dist/shard_score.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>

#include "dist/ring_attention.h"
#include "dist/shard_step.h"
#include "dist/shard_topk.h"
#include "kv/scoped_sequence.h"
#include "kv/shard_layout.h"

namespace stride::dist {

namespace {

constexpr uint32_t kLogitsTag = 1;  // a rank's logits rows to rank 0

}  // namespace

Expected<KvShard> shard_positions(int64_t n, int world, int rank, int page_size, int64_t shard_tokens,
                                  const ShardCostModel& cost) {
  if (world < 1 || rank < 0 || rank >= world || page_size < 1 || n < 1 || shard_tokens < 0)
    return InvalidArgument("shard positions: rank " + std::to_string(rank) + " of " + std::to_string(world) +
                           " for " + std::to_string(n) + " tokens");
  const std::vector<int64_t> b = shard_boundaries(n, world, page_size, shard_tokens, cost);
  const KvShard shard{b[(size_t)rank], b[(size_t)rank + 1], {}};
  if (shard.tokens() <= 0)
    return InvalidArgument("a prompt of " + std::to_string(n) + " tokens leaves shard rank " + std::to_string(rank) +
                           " of " + std::to_string(world) + " no positions (shards are runs of " +
                           std::to_string(page_size) + "-token pages)");
  return shard;
}

Expected<KvShard> every_rank_positions(int64_t n, int world, int rank, int page_size, int64_t shard_tokens,
                                       const ShardCostModel& cost) {
  for (int r = 0; r < world; ++r)
    STRIDE_RETURN_IF_ERROR(shard_positions(n, world, r, page_size, shard_tokens, cost).status());
  return shard_positions(n, world, rank, page_size, shard_tokens, cost);
}

ShardCostModel engine_shard_cost(const Engine& engine) {
  return shard_cost_model(engine.config(), engine.layer_policies());
}

Expected<ShardScore> score_sharded(Engine& engine, ShardGroup& group, const std::vector<int32_t>& ids, int chunk,
                                   int64_t shard_tokens) {
  STRIDE_RETURN_IF_ERROR(check_sharded_policies(engine.layer_policies()));
  if (ids.empty()) return InvalidArgument("score: no tokens");
  KvManager& kv = engine.kv();
  const int ps = kv.config().page_size;
  const int64_t n = (int64_t)ids.size(), n_vocab = engine.config().n_vocab;
  ShardScore r;
  const ShardCostModel cost = engine_shard_cost(engine);
  STRIDE_ASSIGN_OR_RETURN(r.shard, every_rank_positions(n, group.world(), group.rank(), ps, shard_tokens, cost));
  STRIDE_RETURN_IF_ERROR(agree_on_prompt_and_layout(group, ids, shard_tokens,
                                                    shard_boundaries(n, group.world(), ps, shard_tokens, cost)));
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId sid, add_sequence_at(kv, r.shard.pos_begin));
  ScopedSequence seq(kv, sid);
  std::vector<float> mine((size_t)(r.shard.tokens() * n_vocab));  // [shard tokens, n_vocab]
  SequenceStep step;
  step.seq = sid;
  step.tokens = ids.data() + r.shard.pos_begin;
  step.n = (int)r.shard.tokens();
  step.all_logits = true;
  step.logits = mine.data();
  RingAttention ring(group, kv, sid, r.shard.pos_begin, r.shard.pos_end);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  STRIDE_RETURN_IF_ERROR(run_shard_prefill(engine, step, ring, chunk));
  r.forward_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.forward_cpu_seconds = process_cpu_seconds() - cpu0;
  r.ring_seconds = ring.seconds();
  r.wait_seconds = ring.wait_seconds();

  if (group.rank() != 0) {
    r.logits_bytes_sent = (int64_t)(mine.size() * sizeof(float));
    STRIDE_RETURN_IF_ERROR(group.send(0, mine.data(), mine.size() * sizeof(float), kLogitsTag));
  } else {
    r.logits.resize((size_t)(n * n_vocab));
    std::copy(mine.begin(), mine.end(), r.logits.begin());
    for (int from = 1; from < group.world(); ++from) {
      STRIDE_ASSIGN_OR_RETURN(const KvShard theirs, shard_positions(n, group.world(), from, ps, shard_tokens, cost));
      STRIDE_RETURN_IF_ERROR(group.recv(from, r.logits.data() + theirs.pos_begin * n_vocab,
                                        (size_t)(theirs.tokens() * n_vocab) * sizeof(float), kLogitsTag));
    }
  }
  r.payload_bytes_sent = group.payload_bytes_sent();
  return r;
}

}  // namespace stride::dist

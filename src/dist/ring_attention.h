#pragma once
// The engine's sharded attention (model/sharded_attention.h) over a shard
// group: this rank's KV sequence holds the positions of its shard
// (add_sequence_at, kv_manager.h), and each layer's queries attend to it and to
// the earlier ranks' shards, whose pages come around the ring once the
// layer's keys are written (ring_prefill.h), then serve every chunk of the
// layer's queries.
#include <cstdint>
#include <memory>
#include <optional>

#include "dist/ring_prefill.h"
#include "dist/shard_group.h"
#include "kv/kv_manager.h"
#include "model/sharded_attention.h"

namespace stride::dist {

class RingAttention final : public ShardedAttention {
 public:
  // seq holds positions [pos_begin, pos_end) once the step's keys are
  // written; the step's queries are [queries_begin, pos_end) (the positions
  // before were reused from the prefix cache; -1: pos_begin). group, kv and
  // seq outlive this.
  RingAttention(ShardGroup& group, const KvManager& kv, KvManager::SeqId seq, int64_t pos_begin, int64_t pos_end,
                int64_t queries_begin = -1)
      : group_(group),
        kv_(kv),
        seq_(seq),
        pos_begin_(pos_begin),
        pos_end_(pos_end),
        queries_begin_(queries_begin < 0 ? pos_begin : queries_begin) {}

  Status keys_written(int layer, const AttentionParams& params, ThreadPool& threads) override;
  Status attend(int layer, const AttentionParams& params, const float* q, int row0, int n, float* out,
                ThreadPool& threads) override;

  double seconds() const { return seconds_; }            // in ring prefill, every layer so far
  double wait_seconds() const { return wait_seconds_; }  // of which waiting for peers

 private:
  ShardGroup& group_;
  const KvManager& kv_;
  KvManager::SeqId seq_;
  int64_t pos_begin_, pos_end_, queries_begin_;
  double seconds_ = 0, wait_seconds_ = 0;
  int layer_ = -1;                        // whose blocks these are
  std::optional<ShardedLayer> shard_layer_;
  std::unique_ptr<RingBlocks> blocks_;
};

// A shard wholly reused from the prefix cache computes no query, but the
// later ranks still need its pages, and those it relays, at every layer: it
// runs each layer's ring steps, in the order the computing ranks run them.
Status relay_reused_shard(ShardGroup& group, const KvManager& kv, KvManager::SeqId seq, int64_t pos_begin,
                          int64_t pos_end, double* wait_seconds = nullptr);

}  // namespace stride::dist

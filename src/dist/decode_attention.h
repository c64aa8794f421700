#pragma once
// Decode steps of a sequence sharded by position (shard_generate.h). The
// root rank holds the last shard and, after it, the generated tokens' keys;
// it runs the new token through the model, and at each layer its query goes
// to every rank, each attends to the keys it holds, and the partial softmax
// states come back to the root, merged in rank (position) order
// (sharded_decode.h). The other ranks run no model step: they answer the
// root's queries, layer by layer.
#include <cstdint>
#include <utility>
#include <vector>

#include "dist/shard_group.h"
#include "dist/sharded_decode.h"
#include "kv/kv_manager.h"
#include "model/sharded_attention.h"
#include "model/transformer.h"

namespace stride::dist {

// The root's side: the model's attention hook for a step of its sequence,
// which holds positions from pos_begin on.
class DecodeAttention final : public ShardedAttention {
 public:
  // rank_begins: where each rank's positions begin (sharded_decode.h).
  // work (when given) grows by each layer's decode cost (sharded_decode.h).
  DecodeAttention(ShardGroup& group, const KvManager& kv, KvManager::SeqId seq, int64_t pos_begin, int root,
                  std::vector<int64_t> rank_begins, DecodeWork* work = nullptr)
      : group_(group),
        kv_(kv),
        seq_(seq),
        pos_begin_(pos_begin),
        root_(root),
        rank_begins_(std::move(rank_begins)),
        work_(work) {}

  Status keys_written(int, const AttentionParams&, ThreadPool&) override { return Status::Ok(); }
  // A decode step is one chunk: row0 is 0.
  Status attend(int layer, const AttentionParams& params, const float* q, int row0, int n, float* out,
                ThreadPool& threads) override;

 private:
  ShardGroup& group_;
  const KvManager& kv_;
  KvManager::SeqId seq_;
  int64_t pos_begin_;
  int root_;
  std::vector<int64_t> rank_begins_;
  DecodeWork* work_;
};

// Another rank's side of one decode step of n_q tokens at q_pos0: every
// layer's queries from the root against this rank's positions
// [pos_begin, pos_end) of seq, its partials sent back; work as above.
Status answer_decode_step(ShardGroup& group, const Transformer& model, const KvManager& kv, KvManager::SeqId seq,
                          int64_t pos_begin, int64_t pos_end, int n_q, int64_t q_pos0, int root,
                          const std::vector<int64_t>& rank_begins, ThreadPool& threads, DecodeWork* work = nullptr);

}  // namespace stride::dist

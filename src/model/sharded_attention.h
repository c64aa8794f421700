#pragma once
// Attention for a sequence that is one shard of a longer one spread by
// position over several processes (context parallelism): the model hands
// each layer's queries to it instead of running the kernel on the step's
// page lists, after the layer's new keys and values are written. Whoever
// started the shard's KV sequence implements it (dist/ring_attention.h: the
// earlier shards' KV comes around a ring), so the model stays unaware of
// ranks and transports.
#include "attention/attention_params.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace stride {

class ShardedAttention {
 public:
  virtual ~ShardedAttention() = default;
  // Every token of the step has its keys and values of `layer` written;
  // called once per layer, before the layer's first attend().
  virtual Status keys_written(int layer, const AttentionParams& params, ThreadPool& threads) = 0;
  // q: [n, n_head, head_dim_k] of the step's rows [row0, row0 + n) (a chunk
  // of it, or all of it), RoPE applied; out: [n, n_head, head_dim_v],
  // attention over every shard's keys.
  virtual Status attend(int layer, const AttentionParams& params, const float* q, int row0, int n, float* out,
                        ThreadPool& threads) = 0;
};

}  // namespace stride

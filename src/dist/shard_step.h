#pragma once
// What every rank of a shard set does alike around its engine: agree that
// all ranks were given one prompt, and run one step of its own sequence with
// the step's attention handed to a ShardedAttention (ring prefill of a
// shard, or a decode step's partials gathered across ranks).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "dist/shard_group.h"
#include "engine/engine.h"
#include "model/op_profile.h"
#include "model/sharded_attention.h"

namespace stride::dist {

// InvalidArgument on every rank when any rank's ids, shard_tokens or cut
// (shard_boundaries: it follows from them and the rank's model and policies)
// differ.
Status agree_on_prompt_and_layout(ShardGroup& group, const std::vector<int32_t>& ids, int64_t shard_tokens,
                                  const std::vector<int64_t>& cut);
// agree_on_prompt_and_layout in one allreduce with the positions the set reuses from the ranks' prefix
// caches: the smallest reuse_stop of any rank (a rank's first position not
// cached; INT64_MAX when its whole shard is), so the reuse runs from 0.
Expected<int64_t> agree_on_prompt_and_reuse(ShardGroup& group, const std::vector<int32_t>& ids, int64_t shard_tokens,
                                            const std::vector<int64_t>& cut, int64_t reuse_stop);

// Every rank's part of a request taken or refused together, once the ranks
// agreed on the prompt and before any page travels: `mine` is how adding
// this rank's sequence and reserving its shard's pages went. When any rank
// failed, every rank returns the same error: the first failing rank's, named
// ("shard rank 1 of 2 cannot take its part of the request: KV pool
// exhausted: ..."). The ranks stay in step either way.
Status agree_on_admission(ShardGroup& group, const Status& mine);

// On the rank that keeps the generated tokens (the root), once its prefill
// step's pages are reserved: whether its pool has the pages the generation
// adds, so a request whose max_tokens would fill it is refused at admission
// (agree_on_admission) rather than failing the group mid-decode. Its
// sequence holds [pos_begin, pos_end) and grows by max_tokens - 1 decode
// steps (the last token is sampled, not run); the pages it then holds at
// most beyond its prefill's, by the policy predicate counted from pos_begin
// as the KV manager holds them (kv/kv_pages_needed.h: no sink page on a rank
// after the first), must be free now. Free counts cached pages no sequence
// references, as allocation evicts them.
Status decode_growth_fits(const KvManager& kv, std::span<const PolicySpec> layers, int64_t pos_begin,
                          int64_t pos_end, int max_tokens);

// The step's tokens through every layer as one step (the model's chunk
// limit raised to step.n for it), attention through `sharded`: a decode step.
Status run_shard_step(Engine& engine, const SequenceStep& step, ShardedAttention& sharded);

// A shard's prefill: one step run layer by layer in chunks of `chunk`
// tokens (0: the engine's prefill chunk; Transformer::forward_layerwise),
// so its activations hold a chunk beside the shard's residual stream.
// admit (when given) hears how reserving the step's pages went, before any
// layer runs; the prefill goes on only if it returns Ok.
Status run_shard_prefill(Engine& engine, const SequenceStep& step, ShardedAttention& sharded, int chunk,
                         const std::function<Status(const Status&)>& admit = {});

}  // namespace stride::dist

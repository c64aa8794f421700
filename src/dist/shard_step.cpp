#include "dist/shard_step.h"

#include <algorithm>
#include <span>

namespace stride::dist {

namespace {

// FNV-1a over the ids, so the ranks can check that they were given one prompt.
int64_t prompt_digest(const std::vector<int32_t>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (const int32_t id : ids) {
    h ^= (uint32_t)id;
    h *= 1099511628211ull;
  }
  return (int64_t)(h >> 2);  // non-negative, so its negation is exact
}

}  // namespace

Status agree_on_prompt(ShardGroup& group, const std::vector<int32_t>& ids) {
  const int64_t digest = prompt_digest(ids);
  int64_t agree[2] = {digest, -digest};  // the max of both is the same digest only if all agree
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(agree, 2));
  if (agree[0] != -agree[1]) return InvalidArgument("the shard ranks were given different prompts");
  return Status::Ok();
}

Expected<int64_t> agree_on_prompt_and_reuse(ShardGroup& group, const std::vector<int32_t>& ids, int64_t shard_tokens,
                                            int64_t reuse_stop) {
  const int64_t digest = prompt_digest(ids);
  // Each value beside its negation: the max of both is the same value only if all agree.
  int64_t agree[5] = {digest, -digest, shard_tokens, -shard_tokens, -reuse_stop};
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(agree, 5));
  if (agree[0] != -agree[1]) return InvalidArgument("the shard ranks were given different prompts");
  if (agree[2] != -agree[3]) return InvalidArgument("the shard ranks were given different --shard-tokens");
  return -agree[4];
}

Status run_shard_step(Engine& engine, const SequenceStep& step, ShardedAttention& sharded) {
  Transformer& model = engine.model();
  KvManager& kv = engine.kv();
  const int chunk = model.max_chunk();
  model.set_max_chunk(std::max(chunk, step.n));
  Status st = [&]() -> Status {
    STRIDE_ASSIGN_OR_RETURN(StepPlan plan, kv.prepare(std::span<const SequenceStep>(&step, 1)));
    STRIDE_RETURN_IF_ERROR(model.forward_batch(kv, plan, engine.pool(), &sharded));
    return kv.commit(plan);
  }();
  model.set_max_chunk(chunk);
  return st;
}

Status run_shard_prefill(Engine& engine, const SequenceStep& step, ShardedAttention& sharded, int chunk) {
  Transformer& model = engine.model();
  KvManager& kv = engine.kv();
  const int engine_chunk = model.max_chunk();
  if (chunk > 0) model.set_max_chunk(chunk);
  Status st = [&]() -> Status {
    STRIDE_ASSIGN_OR_RETURN(StepPlan plan, kv.prepare(std::span<const SequenceStep>(&step, 1)));
    STRIDE_RETURN_IF_ERROR(model.forward_layerwise(kv, plan, engine.pool(), sharded));
    return kv.commit(plan);
  }();
  model.set_max_chunk(engine_chunk);
  return st;
}

}  // namespace stride::dist

#include "dist/shard_step.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "kv/kv_pages_needed.h"

namespace stride::dist {

namespace {

// FNV-1a over the values, so the ranks can check that they were given one prompt and cut it alike.
template <typename T>
int64_t digest(const std::vector<T>& values) {
  uint64_t h = 1469598103934665603ull;
  for (const T v : values) {
    h ^= (uint64_t)v;
    h *= 1099511628211ull;
  }
  return (int64_t)(h >> 2);  // non-negative, so its negation is exact
}

// The prompt's digest and the layout beside their negations, then `extra`
// values, max-allreduced: a value's max and its negation's are the same
// value only if every rank gave it.
Expected<std::vector<int64_t>> agree_with_layout(ShardGroup& group, const std::vector<int32_t>& ids,
                                                 int64_t shard_tokens, const std::vector<int64_t>& cut,
                                                 std::vector<int64_t> extra) {
  const int64_t prompt = digest(ids), layout = digest(cut);
  std::vector<int64_t> agree{prompt, -prompt, shard_tokens, -shard_tokens, layout, -layout};
  agree.insert(agree.end(), extra.begin(), extra.end());
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(agree.data(), agree.size()));
  if (agree[0] != -agree[1]) return InvalidArgument("the shard ranks were given different prompts");
  if (agree[2] != -agree[3]) return InvalidArgument("the shard ranks were given different --shard-tokens");
  if (agree[4] != -agree[5])
    return InvalidArgument("the shard ranks cut the prompt differently (their models or attention policies differ)");
  return std::vector<int64_t>(agree.begin() + 6, agree.end());
}

// The failing rank's error as every rank reports it, cut to this many bytes.
constexpr size_t kAdmissionMessageBytes = 512;

}  // namespace

Status agree_on_prompt_and_layout(ShardGroup& group, const std::vector<int32_t>& ids, int64_t shard_tokens,
                                  const std::vector<int64_t>& cut) {
  return agree_with_layout(group, ids, shard_tokens, cut, {}).status();
}

Expected<int64_t> agree_on_prompt_and_reuse(ShardGroup& group, const std::vector<int32_t>& ids, int64_t shard_tokens,
                                            const std::vector<int64_t>& cut, int64_t reuse_stop) {
  STRIDE_ASSIGN_OR_RETURN(const std::vector<int64_t> agreed,
                          agree_with_layout(group, ids, shard_tokens, cut, {-reuse_stop}));
  return -agreed[0];
}

Status agree_on_admission(ShardGroup& group, const Status& mine) {
  const int w = group.world(), me = group.rank();
  // [world] each rank's status code in its own slot; the max brings every slot to every rank.
  std::vector<int64_t> codes((size_t)w, 0);
  codes[(size_t)me] = (int64_t)mine.code();
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(codes.data(), codes.size()));
  const auto failed = std::find_if(codes.begin(), codes.end(), [](int64_t c) { return c != 0; });
  if (failed == codes.end()) return Status::Ok();
  // The first rank that failed tells every rank why, so each gives the same clear error.
  const int from = (int)(failed - codes.begin());
  std::array<char, kAdmissionMessageBytes> why{};
  if (me == from) mine.message().copy(why.data(), why.size() - 1);
  STRIDE_RETURN_IF_ERROR(group.broadcast(why.data(), why.size(), from));
  return Status((StatusCode)*failed, "shard rank " + std::to_string(from) + " of " + std::to_string(w) +
                                         " cannot take its part of the request: " + std::string(why.data()));
}

Status decode_growth_fits(const KvManager& kv, std::span<const PolicySpec> layers, int64_t pos_begin,
                          int64_t pos_end, int max_tokens) {
  const int ps = kv.config().page_size;
  const int64_t steps = std::max(0, max_tokens - 1);
  if (steps == 0) return Status::Ok();
  const int64_t shard_tokens = pos_end - pos_begin;
  const int64_t prefill = shard_pages_for_growth(layers, ps, pos_begin, pos_begin, shard_tokens,
                                                 (int)std::max<int64_t>(1, shard_tokens));
  const int64_t decode = shard_pages_for_growth(layers, ps, pos_begin, pos_end, steps, 1);
  const int64_t more = decode - prefill;
  const KvStats ks = kv.stats();
  const int64_t free_pages = ks.pages_total - ks.pages_used;
  if (more <= free_pages) return Status::Ok();
  return ResourceExhausted("KV pool exhausted: the " + std::to_string(max_tokens) +
                           " tokens to generate need " + std::to_string(more) +
                           " more pages on the rank that keeps them, " + std::to_string(free_pages) + " free of " +
                           std::to_string(ks.pages_total));
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

Status run_shard_prefill(Engine& engine, const SequenceStep& step, ShardedAttention& sharded, int chunk,
                         const std::function<Status(const Status&)>& admit) {
  Transformer& model = engine.model();
  KvManager& kv = engine.kv();
  const int engine_chunk = model.max_chunk();
  if (chunk > 0) model.set_max_chunk(chunk);
  Status st = [&]() -> Status {
    Expected<StepPlan> prepared = kv.prepare(std::span<const SequenceStep>(&step, 1));
    if (admit) STRIDE_RETURN_IF_ERROR(admit(prepared.status()));
    STRIDE_ASSIGN_OR_RETURN(StepPlan plan, std::move(prepared));
    STRIDE_RETURN_IF_ERROR(model.forward_layerwise(kv, plan, engine.pool(), sharded));
    return kv.commit(plan);
  }();
  model.set_max_chunk(engine_chunk);
  return st;
}

}  // namespace stride::dist

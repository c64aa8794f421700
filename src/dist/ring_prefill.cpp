#include "dist/ring_prefill.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/plan.h"
#include "dist/partial_merge.h"

namespace stride::dist {

namespace {

struct AgreedShards {
  std::vector<KvShard> keys;     // [world] each rank's positions
  std::vector<KvShard> queries;  // [world] the positions whose keys a rank's queries (or a later rank's) see
};

// Every rank's positions and queries, in rank order: one agreement per layer.
// A rank wholly reused from the prefix cache computes no query; it still
// relays, so it receives what a query at its end sees, which (policies only
// lose keys as queries advance) holds what every later rank sees.
Expected<AgreedShards> agree_on_shards(ShardGroup& group, const KvShard& mine, int64_t queries_begin) {
  const int world = group.world();
  std::vector<int64_t> bounds((size_t)world * 3, INT64_MIN);  // [world] begin, end, queries' begin
  bounds[(size_t)group.rank() * 3] = mine.pos_begin;
  bounds[(size_t)group.rank() * 3 + 1] = mine.pos_end;
  bounds[(size_t)group.rank() * 3 + 2] = queries_begin;
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(bounds.data(), bounds.size()));
  AgreedShards a;
  for (int r = 0; r < world; ++r) {
    const int64_t* b = bounds.data() + (size_t)r * 3;
    a.keys.push_back(KvShard{b[0], b[1], {}});
    a.queries.push_back(KvShard{b[2], std::max(b[1], b[2] + 1), {}});
  }
  return a;
}

}  // namespace

std::vector<int32_t> ring_block_pages(const PolicySpec& policy, const KvShard& origin, const KvShard& receiver,
                                      int page_size) {
  std::vector<int32_t> pages;
  if (receiver.pos_begin < origin.pos_end) return pages;  // the receiver comes first: all in its future
  for (int32_t i = 0; i < origin.pages(page_size); ++i) {
    const int64_t first = origin.pos_begin + (int64_t)i * page_size;
    const int64_t last = std::min(first + page_size, origin.pos_end) - 1;
    if (policy_any_visible(policy, receiver.pos_begin, receiver.pos_end - 1, first, last)) pages.push_back(i);
  }
  return pages;
}

int64_t ring_prefill_bytes(const PolicySpec& policy, const std::vector<KvShard>& shards, int rank, int page_size,
                           int64_t page_image_bytes) {
  const int world = (int)shards.size();
  int64_t pages = 0;
  for (int s = 0; s + 1 < world && rank + 1 < world && rank - s >= 0; ++s)
    pages += (int64_t)ring_block_pages(policy, shards[(size_t)(rank - s)], shards[(size_t)rank + 1], page_size).size();
  return (int64_t)sizeof(int64_t) * 3 * world + pages * page_image_bytes;
}

Expected<std::unique_ptr<RingBlocks>> RingBlocks::gather(ShardGroup& group, const ShardedLayer& layer,
                                                         int64_t queries_begin, double* wait_seconds) {
  double waited = 0;
  auto timed = [&waited](Status st, std::chrono::steady_clock::time_point t0) {
    waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  };
  if (layer.policy.kind == PolicyKind::TopK && !layer.policy.prefill_dense)
    return Unsupported("ring prefill: top-k selection on prompt chunks is not supported across ranks "
                       "(prefill=dense selects on decode steps only)");
  const KvPoolShape& shape = layer.pool->shape();
  const int ps = shape.page_size;
  const auto agreed_at = std::chrono::steady_clock::now();
  if (queries_begin < layer.shard.pos_begin || queries_begin > layer.shard.pos_end)
    return InvalidArgument("ring prefill: queries from " + std::to_string(queries_begin) + " outside the shard's positions");
  auto agreed = agree_on_shards(group, layer.shard, queries_begin);
  STRIDE_RETURN_IF_ERROR(timed(agreed.status(), agreed_at));
  const AgreedShards a = std::move(agreed).value();
  const std::vector<KvShard>& shards = a.keys;
  const int rank = group.rank(), world = group.world();
  // Which pages of origin o rank r receives (ring_block_pages); none from a rank
  // after it or for a block past the last rank, so a block stops where its keys stop being seen.
  auto block_pages = [&](int o, int r) {
    return o >= 0 && r < world ? ring_block_pages(layer.policy, shards[(size_t)o], a.queries[(size_t)r], ps)
                               : std::vector<int32_t>{};
  };
  auto b = std::make_unique<RingBlocks>(Private{});
  b->rank_ = rank;
  std::vector<int32_t> first((size_t)rank + 1, 0);  // [rank + 1] where each origin's pages begin in received_
  for (int o = 0; o < rank; ++o) {
    const std::vector<int32_t> seen = block_pages(o, rank);
    KvShard block{shards[(size_t)o].pos_begin, shards[(size_t)o].pos_end, {}};
    block.page_ids.assign((size_t)block.pages(ps), -1);  // pages it cannot see stay away
    for (size_t j = 0; j < seen.size(); ++j) block.page_ids[(size_t)seen[j]] = first[(size_t)o] + (int32_t)j;
    first[(size_t)o + 1] = first[(size_t)o] + (int32_t)seen.size();
    b->blocks_.push_back(std::move(block));
  }
  b->n_pages_ = first[(size_t)rank];
  if (rank > 0) {
    STRIDE_ASSIGN_OR_RETURN(b->received_, KvPool::create(shape, std::max<int32_t>(1, first[(size_t)rank])));
  }

  const size_t image = (size_t)layer.pool->page_image_bytes();
  // Step s: this rank forwards what the next rank sees of origin rank - s
  // (its own pages at step 0, then what it received at step s - 1) and
  // receives origin rank - s - 1's block.
  std::vector<uint8_t> outgoing, incoming;
  for (int s = 0; s + 1 < world; ++s) {
    const int origin = rank - s;
    const std::vector<int32_t> send_pages = block_pages(origin, rank + 1);
    const std::vector<int32_t> recv_pages = block_pages(origin - 1, rank);
    outgoing.resize(send_pages.size() * image);
    for (size_t j = 0; j < send_pages.size(); ++j) {
      const std::span<uint8_t> dst(outgoing.data() + j * image, image);
      if (s == 0) {
        const int32_t own = layer.shard.pool_page(send_pages[j]);
        if (own < 0) return Internal("ring prefill: the next rank sees a page this rank does not hold");
        layer.pool->save_page(own, dst);
        continue;
      }
      // The next rank sees a subset of what this rank saw (policies lose keys as queries advance).
      const int32_t held = b->blocks_[(size_t)origin].page_ids[(size_t)send_pages[j]];
      if (held < 0) return Internal("ring prefill: the next rank sees a page this rank did not receive");
      b->received_->save_page(held, dst);
    }
    incoming.resize(recv_pages.size() * image);
    const auto t0 = std::chrono::steady_clock::now();
    STRIDE_RETURN_IF_ERROR(
        timed(group.ring_pass_start(outgoing.data(), outgoing.size(), incoming.data(), incoming.size()), t0));
    STRIDE_RETURN_IF_ERROR(timed(group.ring_pass_finish(), std::chrono::steady_clock::now()));
    for (size_t j = 0; j < recv_pages.size(); ++j)
      b->received_->load_page(first[(size_t)origin - 1] + (int32_t)j,
                              std::span<const uint8_t>(incoming.data() + j * image, image));
  }
  if (wait_seconds) *wait_seconds += waited;
  return b;
}

Status RingBlocks::attend(const ShardedLayer& layer, const float* q, int64_t q_pos0, int n_q, float* out,
                          ThreadPool& threads) const {
  const KvPoolShape& shape = layer.pool->shape();
  const int ps = shape.page_size;
  const int64_t q_end = q_pos0 + n_q;
  if (q_pos0 < layer.shard.pos_begin || q_end > layer.shard.pos_end)
    return InvalidArgument("ring prefill: queries at " + std::to_string(q_pos0) + ".." + std::to_string(q_end) +
                           " outside the shard's positions");
  const PartialsLayout layout{n_q * layer.params.n_head, shape.head_dim_v};
  std::vector<float> parts(layout.floats() * (size_t)(rank_ + 1));  // [rank + 1] in rank order
  // A TopK layer that does not select here reads every causal page, as one host plans it.
  const int q_block = layer.policy.kind == PolicyKind::TopK ? default_q_block(n_q) : policy_q_block(layer.policy, n_q);
  KvShard own = layer.shard;  // up to the queries' end
  own.pos_end = q_end;
  if (!own.page_ids.empty()) own.page_ids.resize((size_t)own.pages(ps));
  for (int origin = 0; origin <= rank_; ++origin) {
    const bool mine = origin == rank_;
    const AttentionPlan plan = plan_shard_attention(layer.policy, mine ? own : blocks_[(size_t)origin], ps,
                                                    shape.n_kv_heads, q_pos0, n_q, q_block);
    AttentionParams params = layer.params;
    if (origin != 0) params.sink_logits = nullptr;  // the sink joins each row's sum once
    float* part = parts.data() + (size_t)origin * layout.floats();
    STRIDE_RETURN_IF_ERROR(attention_paged_partial(mine ? *layer.pool : *received_, plan, layer.policy, params, q,
                                                   layout.view(part), threads));
  }
  merge_partials(layout, parts.data(), rank_ + 1, out);
  return Status::Ok();
}

Status ring_prefill(ShardGroup& group, const ShardedLayer& layer, const float* q, int n_q, float* out,
                    ThreadPool& threads, double* wait_seconds) {
  if (n_q != layer.shard.tokens())
    return InvalidArgument("ring prefill: " + std::to_string(n_q) + " queries for a shard of " +
                           std::to_string(layer.shard.tokens()) + " positions");
  STRIDE_ASSIGN_OR_RETURN(const std::unique_ptr<RingBlocks> blocks,
                           RingBlocks::gather(group, layer, layer.shard.pos_begin, wait_seconds));
  return blocks->attend(layer, q, layer.shard.pos_begin, n_q, out, threads);
}

}  // namespace stride::dist

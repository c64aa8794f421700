#include "dist/ring_prefill.h"

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_kernel.h"
#include "dist/partial_merge.h"

namespace stride::dist {

namespace {

// A block on the wire: [pos_begin, pos_end] int64 | [max_pages] page images.
constexpr size_t kBlockHeader = 2 * sizeof(int64_t);

void pack_block(const KvPool& pool, const KvShard& shard, std::vector<uint8_t>& block) {
  const int64_t header[2] = {shard.pos_begin, shard.pos_end};
  std::memcpy(block.data(), header, kBlockHeader);
  const int64_t image = pool.page_image_bytes();
  for (int32_t i = 0; i < shard.pages(pool.shape().page_size); ++i)
    pool.save_page(shard.pool_page(i), std::span<uint8_t>(block.data() + kBlockHeader + i * image, (size_t)image));
}

// The shard a block carries, its pages loaded into pages 0, 1, ... of pool.
KvShard unpack_block(const std::vector<uint8_t>& block, KvPool& pool) {
  int64_t header[2];
  std::memcpy(header, block.data(), kBlockHeader);
  const KvShard shard{header[0], header[1], {}};
  const int64_t image = pool.page_image_bytes();
  for (int32_t i = 0; i < shard.pages(pool.shape().page_size); ++i)
    pool.load_page(i, std::span<const uint8_t>(block.data() + kBlockHeader + i * image, (size_t)image));
  return shard;
}

}  // namespace

Status ring_prefill(ShardGroup& group, const ShardedLayer& layer, const float* q, int n_q, float* out,
                    ThreadPool& threads) {
  if (layer.policy.kind == PolicyKind::TopK)
    return Unsupported("ring prefill: top-k attention is not supported across ranks yet");
  const KvPoolShape& shape = layer.pool->shape();
  if (n_q != layer.shard.tokens())
    return InvalidArgument("ring prefill: " + std::to_string(n_q) + " queries for a shard of " +
                           std::to_string(layer.shard.tokens()) + " positions");
  int64_t max_pages = layer.shard.pages(shape.page_size);
  STRIDE_RETURN_IF_ERROR(group.allreduce_max(&max_pages, 1));
  if (max_pages > layer.pool->n_pages())
    return InvalidArgument("ring prefill: a shard of " + std::to_string(max_pages) + " pages, the pool holds " +
                           std::to_string(layer.pool->n_pages()));

  const int rank = group.rank(), world = group.world();
  const size_t block_bytes = kBlockHeader + (size_t)max_pages * layer.pool->page_image_bytes();
  std::vector<uint8_t> current(block_bytes), next(world > 1 ? block_bytes : 0);
  pack_block(*layer.pool, layer.shard, current);
  std::unique_ptr<KvPool> received;  // earlier ranks' pages, one block at a time
  if (rank > 0) {
    STRIDE_ASSIGN_OR_RETURN(received, KvPool::create(shape, (int32_t)max_pages));
  }

  const PartialsLayout layout{n_q * layer.params.n_head, shape.head_dim_v};
  std::vector<float> parts(layout.floats() * (size_t)(rank + 1));  // [rank + 1] in rank order
  const int q_block = policy_q_block(layer.policy, n_q);
  // Step s: `current` holds the block of rank - s, which goes on to the next rank meanwhile.
  for (int s = 0; s < world; ++s) {
    const bool pass = s + 1 < world;
    if (pass) STRIDE_RETURN_IF_ERROR(group.ring_pass_start(current.data(), next.data(), block_bytes));
    const int origin = rank - s;
    Status attended = Status::Ok();
    if (origin >= 0) {  // later ranks' keys are in this rank's future: masked whole
      const KvPool* pool = layer.pool;
      KvShard shard = layer.shard;
      if (s > 0) {
        shard = unpack_block(current, *received);
        pool = received.get();
      }
      const AttentionPlan plan = plan_shard_attention(layer.policy, shard, shape.page_size, shape.n_kv_heads,
                                                      layer.shard.pos_begin, n_q, q_block);
      AttentionParams params = layer.params;
      if (origin != 0) params.sink_logits = nullptr;  // the sink joins each row's sum once
      float* part = parts.data() + (size_t)origin * layout.floats();
      attended = attention_paged_partial(*pool, plan, layer.policy, params, q, layout.view(part), threads);
    }
    if (pass) STRIDE_RETURN_IF_ERROR(group.ring_pass_finish());
    STRIDE_RETURN_IF_ERROR(attended);
    std::swap(current, next);
  }
  merge_partials(layout, parts.data(), rank + 1, out);
  return Status::Ok();
}

}  // namespace stride::dist

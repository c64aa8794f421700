// Attention over keys split by position into shards, each shard's partial
// softmax states from the kernel (attention_paged_partial), merged in rank
// order (merge_partials): against the scalar reference (attention_reference)
// on all keys at once; and bit for bit against the one-host kernel when
// every shard after the first is one of the kernel's segments.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attention/attention_kernel.h"
#include "core/thread_pool.h"
#include "dist/partial_merge.h"
#include "shard_fixture.h"

namespace stride::dist {
namespace {

using testing::kHd;
using testing::kNhead;
using testing::kNkv;
using testing::kPage;
using testing::kSegmentKeys;
using testing::Layer;

// Queries: the last n_q positions. Returns the merged output.
std::vector<float> sharded(const Layer& layer, const PolicySpec& policy, const std::vector<KvShard>& shards,
                           const std::vector<float>& q, int n_q, ThreadPool& threads) {
  const int64_t q_pos0 = layer.kv_len - n_q;
  const PartialsLayout layout{n_q * kNhead, kHd};
  std::vector<float> parts(layout.floats() * shards.size());
  for (size_t r = 0; r < shards.size(); ++r) {
    const auto pool = layer.pool_for(shards[r], shards[r].pages(kPage));
    const AttentionPlan plan = plan_shard_attention(policy, shards[r], kPage, kNkv, q_pos0, n_q,
                                                    policy_q_block(policy, n_q));
    AttentionParams p = layer.params();
    if (r > 0) p.sink_logits = nullptr;
    const Status ran = attention_paged_partial(*pool, plan, policy, p, q.data(),
                                               layout.view(parts.data() + r * layout.floats()), threads);
    EXPECT_TRUE(ran.ok()) << ran.to_string();
  }
  std::vector<float> out((size_t)n_q * kNhead * kHd);
  merge_partials(layout, parts.data(), (int)shards.size(), out.data());
  return out;
}

struct Case {
  const char* policy;
  KvStorage storage;
  bool sinks;
  int n_q;
  std::vector<int64_t> bounds;  // shard boundaries, 0 .. kv_len
  bool segment_aligned;         // every shard after the first is one kernel segment
};

void check(const Case& c) {
  std::string bounds;
  for (int64_t b : c.bounds) bounds.append(" ").append(std::to_string(b));
  SCOPED_TRACE(std::string(c.policy) + " " + kv_storage_name(c.storage) + (c.sinks ? " sinks" : "") +
               " n_q=" + std::to_string(c.n_q) + " bounds:" + bounds);
  const PolicySpec policy = *parse_policy(c.policy);
  const Layer layer(c.bounds.back(), c.storage, c.sinks);
  const auto q = testing::random_vec((size_t)c.n_q * kNhead * kHd, 3);
  ThreadPool threads(2);
  const auto got = sharded(layer, policy, testing::shards_at(c.bounds), q, c.n_q, threads);
  const auto want = layer.reference(policy, q.data(), c.n_q, layer.kv_len - c.n_q);
  EXPECT_LT(testing::max_abs_diff(got, want), 2e-5f);
  if (c.segment_aligned) {
    const auto kernel = layer.one_host(policy, q.data(), c.n_q, layer.kv_len - c.n_q, threads);
    ASSERT_FALSE(kernel.empty());
    EXPECT_EQ(std::memcmp(got.data(), kernel.data(), got.size() * sizeof(float)), 0)
        << "differs from the one-host kernel by up to " << testing::max_abs_diff(got, kernel);
  }
}

constexpr int64_t S = kSegmentKeys;

TEST(PartialMerge, DecodeOverTwoAndFourShardsOnSegmentsIsTheOneHostKernel) {
  for (KvStorage st : {KvStorage::F16, KvStorage::F32, KvStorage::Int8})
    for (bool sinks : {false, true}) {
      check({"dense", st, sinks, 1, {0, 3 * S, 3 * S + 77}, true});
      check({"dense", st, sinks, 1, {0, 2 * S, 3 * S, 4 * S, 4 * S + 37}, true});
    }
}

TEST(PartialMerge, PrefillChunkOverShardsOnSegmentsIsTheOneHostKernel) {
  check({"dense", KvStorage::F16, false, 45, {0, 2 * S, 3 * S, 3 * S + 100}, true});
  check({"rswa:sinks=4,window=300,pos=rel", KvStorage::F16, true, 40, {0, S, 2 * S, 3 * S, 4 * S}, true});
}

TEST(PartialMerge, ShardsOfAnyPagesMatchTheReference) {
  // Page-aligned but not segment-aligned, several segments per shard, empty
  // shards under a window: the merge regroups the folds, so only tolerance.
  check({"dense", KvStorage::F16, true, 1, {0, 15 * kPage, 30 * kPage, 45 * kPage, 1000}, false});
  check({"dense", KvStorage::F32, false, 33, {0, 16 * kPage, 32 * kPage, 48 * kPage, 1000}, false});
  check({"window:size=200", KvStorage::F16, false, 1, {0, 20 * kPage, 40 * kPage, 1000}, false});
  check({"rswa:sinks=4,window=300,pos=rel", KvStorage::F16, true, 8, {0, 5 * kPage, 1000}, false});
}

TEST(PartialMerge, ARowWithoutKeysIsZero) {
  // Two shards that each saw nothing (m = -inf, d = 0): zeros, as the kernel writes.
  const PartialsLayout layout{1, 4};
  std::vector<float> parts(layout.floats() * 2, 0.f);
  for (int i = 0; i < 2; ++i) parts[i * layout.floats()] = -INFINITY;
  std::vector<float> out(4, -1.f);
  merge_partials(layout, parts.data(), 2, out.data());
  for (float x : out) EXPECT_EQ(x, 0.f);
}

}  // namespace
}  // namespace stride::dist

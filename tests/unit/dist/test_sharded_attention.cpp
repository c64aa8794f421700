// Attention of one layer across 2 and 4 ranks, each a process on loopback
// holding one contiguous position shard of the KV, connected through Gloo:
// decode (the root's query to every rank, partials back to the root: rank 0,
// or the last rank as in generation, whose shard may span segments) and ring
// prefill (each rank's chunk of queries, KV passed around the ring), against
// the scalar reference and, with shards on the kernel's segments, bit for
// bit against the one-host kernel. And a rank that dies mid-operation: the
// others return an IoError within the timeout instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "dist/ring_prefill.h"
#include "dist/shard_group.h"
#include "dist/sharded_decode.h"
#include "rank_processes.h"
#include "shard_fixture.h"

namespace stride::dist {
namespace {

using testing::kHd;
using testing::kNhead;
using testing::kPage;
using testing::kSegmentKeys;
using testing::Layer;
using testing::RankReport;
using testing::RendezvousDir;

constexpr int64_t S = kSegmentKeys;
constexpr auto kDeadline = std::chrono::seconds(60);

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Decode on `world` ranks: the query at position kv_len - 1 (or the last n_q).
RankReport decode_rank(const RendezvousDir& dir, const Layer& layer, const PolicySpec& policy,
                       const std::vector<KvShard>& shards, const std::vector<float>& q, int n_q, int root,
                       bool tell_positions, int rank) {
  RankReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  auto group = ShardGroup::connect(dir.options(rank, (int)shards.size(), std::chrono::seconds(20)));
  if (!group.ok()) return testing::failed(group.status());
  const auto pool = layer.pool_for(shards[rank], shards[rank].pages(kPage));
  const ShardedLayer mine{pool.get(), shards[rank], policy, layer.params()};
  std::vector<float> my_q = rank == root ? q : std::vector<float>(q.size(), 0.f);
  std::vector<float> out((size_t)n_q * kNhead * kHd);
  ThreadPool threads(1);
  std::vector<int64_t> begins;  // empty: every rank takes part
  for (const KvShard& s : shards)
    if (tell_positions) begins.push_back(s.pos_begin);
  rep.status = sharded_decode(**group, mine, my_q.data(), n_q, layer.kv_len - n_q, out.data(), threads, root, begins);
  if (rank == root) rep.out = out;
  rep.bytes_sent = (*group)->payload_bytes_sent();
  // A rank not asked returns at once: it stays until every rank is done, since
  // a peer's closing connections fail the receives still pending in a group.
  int64_t done = 1;
  if (rep.status.ok()) rep.status = (*group)->allreduce_max(&done, 1);
  rep.seconds = since(t0);
  return rep;
}

// rank's shard in a pool with room for the largest shard.
auto shard_pool(const Layer& layer, const std::vector<KvShard>& shards, int rank) {
  int32_t max_pages = 0;
  for (const KvShard& s : shards) max_pages = std::max(max_pages, s.pages(kPage));
  return layer.pool_for(shards[rank], max_pages);
}

RankReport prefill_rank(const RendezvousDir& dir, const Layer& layer, const PolicySpec& policy,
                        const std::vector<KvShard>& shards, const std::vector<float>& q_all, int rank) {
  RankReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  auto group = ShardGroup::connect(dir.options(rank, (int)shards.size(), std::chrono::seconds(20)));
  if (!group.ok()) return testing::failed(group.status());
  const KvShard& shard = shards[rank];
  const auto pool = shard_pool(layer, shards, rank);
  const ShardedLayer mine{pool.get(), shard, policy, layer.params()};
  const int n_q = (int)shard.tokens();
  const float* q = q_all.data() + shard.pos_begin * kNhead * kHd;
  rep.out.resize((size_t)n_q * kNhead * kHd);
  ThreadPool threads(1);
  rep.status = ring_prefill(**group, mine, q, n_q, rep.out.data(), threads);
  rep.bytes_sent = (*group)->payload_bytes_sent();
  rep.seconds = since(t0);
  return rep;
}

// Ring prefill after the prefix cache: positions before compute_from were
// reused, so a rank computes the queries of [max(begin, compute_from), end)
// and a rank wholly before it only relays (RingBlocks::gather with its end).
RankReport reused_prefill_rank(const RendezvousDir& dir, const Layer& layer, const PolicySpec& policy,
                               const std::vector<KvShard>& shards, const std::vector<float>& q_all,
                               int64_t compute_from, int rank) {
  RankReport rep;
  auto group = ShardGroup::connect(dir.options(rank, (int)shards.size(), std::chrono::seconds(20)));
  if (!group.ok()) return testing::failed(group.status());
  const KvShard& shard = shards[rank];
  const auto pool = shard_pool(layer, shards, rank);
  const ShardedLayer mine{pool.get(), shard, policy, layer.params()};
  const int64_t q0 = std::clamp(compute_from, shard.pos_begin, shard.pos_end);
  auto blocks = RingBlocks::gather(**group, mine, q0);
  rep.status = blocks.status();
  if (rep.status.ok() && q0 < shard.pos_end) {
    const int n_q = (int)(shard.pos_end - q0);
    rep.out.resize((size_t)n_q * kNhead * kHd);
    ThreadPool threads(1);
    rep.status = (*blocks)->attend(mine, q_all.data() + q0 * kNhead * kHd, q0, n_q, rep.out.data(), threads);
  }
  rep.bytes_sent = (*group)->payload_bytes_sent();
  return rep;
}

void check_reused_prefill(const char* policy_text, const std::vector<int64_t>& bounds, int64_t compute_from) {
  SCOPED_TRACE(std::string(policy_text) + " from " + std::to_string(compute_from));
  const PolicySpec policy = *parse_policy(policy_text);
  const Layer layer(bounds.back(), KvStorage::F16, false);
  const auto shards = testing::shards_at(bounds);
  const auto q = testing::random_vec((size_t)layer.kv_len * kNhead * kHd, 5);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      (int)shards.size(),
      [&](int r) { return reused_prefill_rank(dir, layer, policy, shards, q, compute_from, r); }, kDeadline);
  ThreadPool threads(2);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    ASSERT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
    const int64_t q0 = std::clamp(compute_from, shards[r].pos_begin, shards[r].pos_end);
    const int n_q = (int)(shards[r].pos_end - q0);
    ASSERT_EQ(ranks[r].report.out.size(), (size_t)n_q * kNhead * kHd) << "rank " << r;
    if (n_q == 0) continue;
    const float* my_q = q.data() + q0 * kNhead * kHd;
    const auto want = layer.reference(policy, my_q, n_q, q0);
    EXPECT_LT(testing::max_abs_diff(ranks[r].report.out, want), 2e-5f) << "rank " << r;
    const auto kernel = layer.one_host(policy, my_q, n_q, q0, threads);  // shards on the kernel's segments
    EXPECT_EQ(std::memcmp(ranks[r].report.out.data(), kernel.data(), kernel.size() * sizeof(float)), 0) << r;
  }
}

struct Case {
  const char* policy;
  KvStorage storage;
  bool sinks;
  std::vector<int64_t> bounds;
  bool segment_aligned;  // every shard after the first is one kernel segment, but the root's may span several
  int root = 0;
  bool tell_positions = false;  // decode: the ranks know each other's positions, so only those holding a seen key take part
};

std::string describe(const Case& c) {
  std::string s = std::string(c.policy) + " " + kv_storage_name(c.storage) + (c.sinks ? " sinks" : "") + " bounds:";
  for (int64_t b : c.bounds) s.append(" ").append(std::to_string(b));
  return s;
}

void check_decode(const Case& c) {
  SCOPED_TRACE(describe(c));
  const PolicySpec policy = *parse_policy(c.policy);
  const Layer layer(c.bounds.back(), c.storage, c.sinks);
  const auto shards = testing::shards_at(c.bounds);
  const int n_q = 1;
  const auto q = testing::random_vec((size_t)n_q * kNhead * kHd, 3);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      (int)shards.size(),
      [&](int r) { return decode_rank(dir, layer, policy, shards, q, n_q, c.root, c.tell_positions, r); },
      kDeadline);
  int64_t bytes = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    ASSERT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
    bytes += ranks[r].report.bytes_sent;
  }
  // Payload per layer and token (sharded_decode.h): the query out, the partials back, for every
  // other rank, or when they know the positions, for those holding a key the query sees (key by key).
  const int64_t world = (int64_t)shards.size();
  int64_t asked = 0;
  for (int64_t r = 0; r < world; ++r) {
    bool sees = !c.tell_positions || (c.sinks && r == 0);
    for (int64_t k = shards[(size_t)r].pos_begin; k < shards[(size_t)r].pos_end && !sees; ++k)
      sees = policy_attends(policy, layer.kv_len - 1, k);
    asked += r != c.root && sees;
  }
  if (c.tell_positions) EXPECT_LT(asked, world - 1) << "a case where some rank is left out";
  EXPECT_EQ(bytes, asked * kNhead * (kHd + kHd + 2) * 4);
  std::printf("[ decode ] %s: %d ranks, payload %lld bytes per layer per token\n", describe(c).c_str(),
              (int)world, (long long)bytes);
  const auto& got = ranks[(size_t)c.root].report.out;
  const auto want = layer.reference(policy, q.data(), n_q, layer.kv_len - n_q);
  EXPECT_LT(testing::max_abs_diff(got, want), 2e-5f);
  if (c.segment_aligned) {
    ThreadPool threads(2);
    const auto kernel = layer.one_host(policy, q.data(), n_q, layer.kv_len - n_q, threads);
    ASSERT_EQ(kernel.size(), got.size());
    EXPECT_EQ(std::memcmp(got.data(), kernel.data(), got.size() * sizeof(float)), 0);
  }
}

void check_prefill(const Case& c) {
  SCOPED_TRACE(describe(c));
  const PolicySpec policy = *parse_policy(c.policy);
  const Layer layer(c.bounds.back(), c.storage, c.sinks);
  const auto shards = testing::shards_at(c.bounds);
  const auto q = testing::random_vec((size_t)layer.kv_len * kNhead * kHd, 4);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      (int)shards.size(), [&](int r) { return prefill_rank(dir, layer, policy, shards, q, r); }, kDeadline);
  int64_t bytes = 0;
  ThreadPool threads(2);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    ASSERT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
    bytes += ranks[r].report.bytes_sent;
    const KvShard& s = shards[r];
    const float* my_q = q.data() + s.pos_begin * kNhead * kHd;
    const auto want = layer.reference(policy, my_q, (int)s.tokens(), s.pos_begin);
    const auto& got = ranks[r].report.out;
    EXPECT_LT(testing::max_abs_diff(got, want), 2e-5f) << "rank " << r;
    if (c.segment_aligned) {
      const auto kernel = layer.one_host(policy, my_q, (int)s.tokens(), s.pos_begin, threads);
      ASSERT_EQ(kernel.size(), got.size());
      EXPECT_EQ(std::memcmp(got.data(), kernel.data(), got.size() * sizeof(float)), 0) << "rank " << r;
    }
  }
  // Payload (ring_prefill.h): every rank's positions agreed (24 bytes per rank, with where its queries begin), and at step s each
  // rank forwards the pages of rank - s that the next rank's queries see, found here key by key.
  const int64_t world = (int64_t)shards.size();
  const auto pool = KvPool::create(layer.shape(), 1);
  ASSERT_TRUE(pool.ok());
  int64_t want_bytes = world * world * 24;  // every rank's positions and queries' begin, agreed
  for (int64_t r = 0; r + 1 < world; ++r) {
    const KvShard& next = shards[(size_t)r + 1];
    for (int64_t origin = 0; origin <= r; ++origin)
      for (int64_t first = shards[(size_t)origin].pos_begin; first < shards[(size_t)origin].pos_end; first += kPage) {
        bool seen = false;
        for (int64_t k = first; k < std::min(first + kPage, shards[(size_t)origin].pos_end) && !seen; ++k)
          for (int64_t qp = next.pos_begin; qp < next.pos_end && !seen; ++qp) seen = policy_attends(policy, qp, k);
        if (seen) want_bytes += (*pool)->page_image_bytes();
      }
  }
  EXPECT_EQ(bytes, want_bytes);
  std::printf("[ prefill ] %s: %d ranks, payload %lld bytes per layer (%.1f per token)\n", describe(c).c_str(),
              (int)world, (long long)bytes, (double)bytes / layer.kv_len);
}

TEST(ShardedAttention, OneRankIsTheOneHostKernel) {
  check_decode({"dense", KvStorage::F16, true, {0, 3 * S + 77}, true});
  check_prefill({"dense", KvStorage::F16, true, {0, 2 * S + 5}, true});
}

TEST(ShardedAttention, DecodeOverTwoAndFourRanks) {
  check_decode({"dense", KvStorage::F16, true, {0, 3 * S, 3 * S + 77}, true});
  check_decode({"dense", KvStorage::F16, false, {0, 2 * S, 3 * S, 4 * S, 4 * S + 37}, true});
  check_decode({"rswa:sinks=4,window=300,pos=rel", KvStorage::Int8, false, {0, 13 * kPage, 26 * kPage, 40 * kPage, 1000}, false});
}

// Generation keeps the new tokens' keys after the last shard, so the root's
// shard grows over several segments; it folds them one by one, as one host does.
TEST(ShardedAttention, DecodeRootedOnTheLastRankWhoseShardSpansSegments) {
  check_decode({"dense", KvStorage::F16, true, {0, 2 * S, 4 * S + 77}, true, 1});
  check_decode({"dense", KvStorage::F16, false, {0, S, 2 * S, 3 * S, 5 * S + 9}, true, 3});
  check_decode({"rswa:sinks=4,window=300,pos=rel", KvStorage::F16, true, {0, 13 * kPage, 40 * kPage, 1000}, false, 2});
}

// Ranks whose keys all lie behind the window (sinks aside) are not asked.
TEST(ShardedAttention, DecodeAsksOnlyTheRanksHoldingASeenKey) {
  check_decode({"rswa:sinks=4,window=64", KvStorage::F16, false, {0, S, 2 * S, 3 * S, 4 * S + 37}, true, 4 - 1, true});
  check_decode({"window:size=200", KvStorage::Int8, true, {0, S, 2 * S, 3 * S, 4 * S + 37}, false, 3, true});
  check_decode({"window:size=64", KvStorage::F16, false, {0, 2 * S, 4 * S}, true, 1, true});
}

TEST(ShardedAttention, RingPrefillOverTwoAndFourRanks) {
  check_prefill({"dense", KvStorage::F16, true, {0, 2 * S, 3 * S}, true});
  check_prefill({"dense", KvStorage::F16, false, {0, S, 2 * S, 3 * S, 4 * S}, true});
  check_prefill({"window:size=200", KvStorage::F32, false, {0, 10 * kPage, 20 * kPage, 30 * kPage, 37 * kPage + 5}, false});
}

// Only the pages a rank's queries see travel to it: R-SWA's sinks and the
// window behind the rank's first query, never a whole earlier shard.
TEST(ShardedAttention, RingPrefillUnderAWindowSendsOnlyVisiblePages) {
  check_prefill({"rswa:sinks=4,window=64", KvStorage::F16, true, {0, S, 2 * S, 3 * S, 4 * S}, true});
  check_prefill({"rswa:sinks=20,window=40,pos=rel", KvStorage::Int8, false, {0, 9 * kPage, 20 * kPage, 30 * kPage + 7}, false});
}

// Ranks wholly reused compute nothing but still send and relay what the
// later ranks' queries see; the rank holding compute_from computes from there.
TEST(ShardedAttention, RingPrefillAfterThePrefixCacheComputesOnlyTheSuffix) {
  check_reused_prefill("dense", {0, S, 2 * S, 3 * S, 4 * S}, 3 * S + S / 2);
  check_reused_prefill("dense", {0, S, 2 * S, 3 * S, 4 * S}, S + 4 * kPage);
  check_reused_prefill("rswa:sinks=4,window=64", {0, S, 2 * S, 3 * S, 4 * S}, 3 * S + S / 2);
  check_reused_prefill("rswa:sinks=4,window=64", {0, S, 2 * S}, S);
}

}  // namespace
}  // namespace stride::dist

// What a decode step costs each rank under a window or R-SWA, counted
// (DecodeWork: the partial states a rank computes and the pages its plans
// read), at two lengths of the same layout of 4 ranks, every shard 4 times
// longer in the second: the counts are the same, since the policy reads a
// fixed set of keys. The root is the last rank, as in generation, where its
// shard spans many kernel segments. The outputs are checked against the
// scalar reference at both lengths.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "dist/shard_group.h"
#include "dist/sharded_decode.h"
#include "rank_processes.h"
#include "shard_fixture.h"

namespace stride::dist {
namespace {

constexpr int64_t S = testing::kSegmentKeys;
constexpr int kWorld = 4, kRoot = kWorld - 1;

// Where each rank's positions begin: every bound but the last.
std::vector<int64_t> bounds_begins(const std::vector<int64_t>& bounds) {
  return std::vector<int64_t>(bounds.begin(), bounds.end() - 1);
}

struct Counted {
  std::vector<DecodeWork> work;  // [rank]
  std::vector<float> out;        // the root's attention output
};

// One decode call of the query at kv_len - 1 over shards {0, s, 2s, 3s,
// kv_len}, every rank told the others' positions; each rank reports its
// output (the root) followed by its DecodeWork.
Counted decode_counted(const char* policy_text, KvStorage storage, bool sinks, int64_t s, int64_t root_tokens) {
  const PolicySpec policy = *parse_policy(policy_text);
  const std::vector<int64_t> bounds{0, s, 2 * s, 3 * s, 3 * s + root_tokens};
  const testing::Layer layer(bounds.back(), storage, sinks);
  const auto shards = testing::shards_at(bounds);
  const auto q = testing::random_vec((size_t)testing::kNhead * testing::kHd, 3);
  const testing::RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      kWorld,
      [&](int rank) {
        auto group = ShardGroup::connect(dir.options(rank, kWorld, std::chrono::seconds(20)));
        if (!group.ok()) return testing::failed(group.status());
        const auto pool = layer.pool_for(shards[(size_t)rank], shards[(size_t)rank].pages(testing::kPage));
        std::vector<float> my_q = rank == kRoot ? q : std::vector<float>(q.size(), 0.f);
        std::vector<float> out((size_t)testing::kNhead * testing::kHd);
        ThreadPool threads(1);
        DecodeWork work;
        testing::RankReport rep;
        rep.status = sharded_decode(**group, {pool.get(), shards[(size_t)rank], policy, layer.params()}, my_q.data(),
                                    1, layer.kv_len - 1, out.data(), threads, kRoot, bounds_begins(bounds), &work);
        if (rank == kRoot) rep.out = out;
        for (int64_t n : {work.calls, work.partials, work.pages_read}) rep.out.push_back((float)n);
        // Every rank stays until all are done, so none sees a peer's connections close mid-call.
        int64_t done = 1;
        if (rep.status.ok()) rep.status = (*group)->allreduce_max(&done, 1);
        return rep;
      },
      std::chrono::seconds(60));
  Counted c;
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(ranks[(size_t)r].reported) << "rank " << r << " crashed or hung";
    if (!ranks[(size_t)r].reported) return {};
    const testing::RankReport& rep = ranks[(size_t)r].report;
    EXPECT_TRUE(rep.status.ok()) << rep.status.to_string();
    const size_t n = rep.out.size();
    if (n < 3) return {};
    c.work.push_back({(int64_t)rep.out[n - 3], (int64_t)rep.out[n - 2], (int64_t)rep.out[n - 1]});
    if (r == kRoot) c.out.assign(rep.out.begin(), rep.out.end() - 3);
  }
  const auto want = layer.reference(policy, q.data(), 1, layer.kv_len - 1);
  EXPECT_LT(testing::max_abs_diff(c.out, want), 2e-5f) << policy_text << " at " << layer.kv_len << " keys";
  return c;
}

void check_same_work_at_two_lengths(const char* policy, KvStorage storage, bool sinks) {
  SCOPED_TRACE(policy);
  const Counted shorter = decode_counted(policy, storage, sinks, 2 * S, 4 * S + 37);
  const Counted longer = decode_counted(policy, storage, sinks, 8 * S, 16 * S + 37);
  ASSERT_EQ(shorter.work.size(), (size_t)kWorld);
  ASSERT_EQ(longer.work.size(), (size_t)kWorld);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(longer.work[(size_t)r].calls, shorter.work[(size_t)r].calls);
    EXPECT_EQ(longer.work[(size_t)r].partials, shorter.work[(size_t)r].partials);
    EXPECT_EQ(longer.work[(size_t)r].pages_read, shorter.work[(size_t)r].pages_read);
  }
  // The root reads its window; rank 0 (sinks, or the sink logits' state) answers too.
  EXPECT_GT(longer.work[kRoot].pages_read, 0);
  std::printf("[ decode cost ] %s: root %lld partials, %lld pages; rank 0 %lld pages\n", policy,
              (long long)longer.work[kRoot].partials, (long long)longer.work[kRoot].pages_read,
              (long long)longer.work[0].pages_read);
}

TEST(ShardedDecodeCost, RswaReadsTheSameAtAnyShardLength) {
  check_same_work_at_two_lengths("rswa:sinks=4,window=64", KvStorage::F16, false);
  check_same_work_at_two_lengths("rswa:sinks=4,window=300,pos=rel", KvStorage::Int8, true);
}

TEST(ShardedDecodeCost, WindowReadsTheSameAtAnyShardLength) {
  check_same_work_at_two_lengths("window:size=200", KvStorage::F16, true);
}

}  // namespace
}  // namespace stride::dist

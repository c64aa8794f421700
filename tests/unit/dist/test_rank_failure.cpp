// A rank of a shard group that dies mid-operation (its process exits after
// the operation's first collective): the ranks still in the operation get an
// IoError that says a peer died or timed out, within the group's timeout,
// and none of them crashes or hangs. A group that never fills up times out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include "dist/rendezvous.h"
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
using testing::Layer;
using testing::RankReport;
using testing::RendezvousDir;

constexpr auto kTimeout = std::chrono::seconds(3);
constexpr auto kDeadline = std::chrono::seconds(60);
constexpr int kDyingExit = 7;

// why: "a peer is gone" or "timed out".
void expect_peer_failure(const testing::RankOutcome& rank, int r, const std::string& why) {
  ASSERT_TRUE(rank.reported) << "rank " << r << " crashed or hung";
  const Status& st = rank.report.status;
  EXPECT_EQ(st.code(), StatusCode::kIoError) << "rank " << r << ": " << st.to_string();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  EXPECT_LE(rank.report.seconds, std::chrono::duration<double>(kTimeout).count() + 1.0) << "rank " << r;
}

TEST(RankFailure, ARankDyingMidDecodeFailsRankZeroCleanly) {
  const PolicySpec policy = *parse_policy("dense");
  const Layer layer(3 * 256, KvStorage::F16, false);
  const std::vector<KvShard> shards = {{0, 256}, {256, 512}, {512, 768}};
  const std::vector<float> q = testing::random_vec((size_t)kNhead * kHd, 3);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(3, [&](int r) -> RankReport {
    auto group = ShardGroup::connect(dir.options(r, 3, kTimeout));
    if (!group.ok()) return testing::failed(group.status());
    std::vector<float> my_q = q;
    if (r == 2) {
      // The query arrives (sharded_decode's first step), then the process dies.
      const Status got = (*group)->recv(0, my_q.data(), my_q.size() * sizeof(float), kDecodeQueryTag);
      _exit(got.ok() ? kDyingExit : 1);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto pool = layer.pool_for(shards[r], shards[r].pages(kPage));
    std::vector<float> out(q.size());
    ThreadPool threads(1);
    RankReport rep;
    rep.status = sharded_decode(**group, {pool.get(), shards[r], policy, layer.params()}, my_q.data(), 1,
                                layer.kv_len - 1, out.data(), threads);
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
  }, kDeadline);
  ASSERT_TRUE(WIFEXITED(ranks[2].exit_status) && WEXITSTATUS(ranks[2].exit_status) == kDyingExit);
  // Rank 0 owns the request: it learns. Rank 1 may have handed over its part
  // before the failure; it must come back either way.
  expect_peer_failure(ranks[0], 0, "a peer is gone");
  ASSERT_TRUE(ranks[1].reported) << "rank 1 crashed or hung";
}

TEST(RankFailure, ARankDyingMidRingPrefillFailsEveryOtherRank) {
  const PolicySpec policy = *parse_policy("dense");
  const Layer layer(4 * 128, KvStorage::F16, false);
  const std::vector<KvShard> shards = {{0, 128}, {128, 256}, {256, 384}, {384, 512}};
  const auto q = testing::random_vec((size_t)layer.kv_len * kNhead * kHd, 4);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(4, [&](int r) -> RankReport {
    auto group = ShardGroup::connect(dir.options(r, 4, kTimeout));
    if (!group.ok()) return testing::failed(group.status());
    if (r == 2) {
      // The agreement on every rank's positions (ring_prefill's first step), then the process dies.
      std::vector<int64_t> bounds(12, INT64_MIN);  // [rank] begin, end, queries' begin
      bounds[6] = shards[r].pos_begin;
      bounds[7] = shards[r].pos_end;
      bounds[8] = shards[r].pos_begin;
      _exit((*group)->allreduce_max(bounds.data(), bounds.size()).ok() ? kDyingExit : 1);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto pool = layer.pool_for(shards[r], shards[r].pages(kPage));
    std::vector<float> out((size_t)shards[r].tokens() * kNhead * kHd);
    ThreadPool threads(1);
    RankReport rep;
    // Two layers, as a model runs them: rank 0 exchanges nothing with rank 2 in a
    // layer's ring (its pages go to rank 1 only), so it may learn at the next layer.
    for (int layer_i = 0; layer_i < 2 && rep.status.ok(); ++layer_i)
      rep.status = ring_prefill(**group, {pool.get(), shards[r], policy, layer.params()},
                                q.data() + shards[r].pos_begin * kNhead * kHd, (int)shards[r].tokens(), out.data(),
                                threads);
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
  }, kDeadline);
  ASSERT_TRUE(WIFEXITED(ranks[2].exit_status) && WEXITSTATUS(ranks[2].exit_status) == kDyingExit);
  for (int r : {0, 1, 3}) expect_peer_failure(ranks[r], r, "a peer is gone");
}

TEST(RankFailure, ARankThatStallsTimesTheOthersOut) {
  // Rank 2 lives but never joins the sum: the others give up at their deadline.
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(3, [&](int r) -> RankReport {
    auto group = ShardGroup::connect(dir.options(r, 3, kTimeout));
    if (!group.ok()) return testing::failed(group.status());
    if (r == 2) {
      std::this_thread::sleep_for(kTimeout + std::chrono::seconds(2));
      return RankReport{};
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> x(4, 1.f);
    RankReport rep;
    rep.status = (*group)->allreduce_sum(x.data(), x.size());
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
  }, kDeadline);
  for (int r : {0, 1}) {
    expect_peer_failure(ranks[r], r, "timed out");
    EXPECT_GE(ranks[r].report.seconds, std::chrono::duration<double>(kTimeout).count() * 0.9) << "rank " << r;
  }
}

TEST(RankFailure, AShardSetIsRebuiltWithoutRestartingRankZero) {
  // Process 0 is rank 0 of both sets; process 1, rank 1 of the first, dies;
  // process 2 joins as rank 1 of the second set, under a new prefix.
  const RendezvousDir dir;
  auto set = [&](int rank, const char* prefix) {
    ShardGroupOptions o = dir.options(rank, 2, kTimeout);
    o.prefix = prefix;
    return ShardGroup::connect(o);
  };
  const auto procs = testing::run_ranks(3, [&](int proc) -> RankReport {
    std::vector<float> x(4, (float)proc + 1.f);
    if (proc == 1) {
      auto first = set(1, "set-1");
      // One sum together, so rank 0 is surely connected, then the process dies.
      _exit(first.ok() && (*first)->allreduce_sum(x.data(), x.size()).ok() ? kDyingExit : 1);
    }
    if (proc == 2) {
      auto second = set(1, "set-2");
      if (!second.ok()) return testing::failed(second.status());
      return testing::failed((*second)->allreduce_sum(x.data(), x.size()).ok() ? Internal("ok") : Internal("sum failed"));
    }
    auto first = set(0, "set-1");
    if (!first.ok()) return testing::failed(first.status());
    RankReport rep;
    if (Status s = (*first)->allreduce_sum(x.data(), x.size()); !s.ok()) return testing::failed(s);
    rep.status = (*first)->allreduce_sum(x.data(), x.size());  // its peer is gone
    if (rep.status.ok()) return testing::failed(Internal("the first set still answers"));
    auto second = set(0, "set-2");
    if (!second.ok()) return testing::failed(second.status());
    std::vector<float> y(4, 1.f);
    const Status summed = (*second)->allreduce_sum(y.data(), y.size());
    if (!summed.ok()) return testing::failed(summed);
    rep.out = y;
    return rep;
  }, kDeadline);
  for (int p : {0, 2})
    ASSERT_TRUE(procs[p].reported) << "process " << p << " crashed or hung: " << procs[p].timed_out << " "
                                   << procs[p].exit_status;
  EXPECT_EQ(procs[0].report.status.code(), StatusCode::kIoError) << procs[0].report.status.to_string();
  EXPECT_EQ(procs[2].report.status.message(), "ok");
  // Rank 0 brought 1 to each value, the new rank 1 brought 3.
  EXPECT_EQ(procs[0].report.out, std::vector<float>(4, 4.f));
}

TEST(RankFailure, AGroupMissingARankTimesOutOnConnect) {
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(1, [&](int) -> RankReport {
    const auto t0 = std::chrono::steady_clock::now();
    auto group = ShardGroup::connect(dir.options(0, 2, kTimeout));  // rank 1 never comes
    RankReport rep;
    rep.status = group.ok() ? Status::Ok() : group.status();
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
  }, kDeadline);
  ASSERT_TRUE(ranks[0].reported) << "crashed or hung";
  EXPECT_FALSE(ranks[0].report.status.ok());
  EXPECT_LE(ranks[0].report.seconds, std::chrono::duration<double>(kTimeout).count() + 2.0);
}

TEST(RankFailure, RendezvousAddressesAreChecked) {
  EXPECT_TRUE(parse_rendezvous("file:/tmp").ok());
  const auto redis = parse_rendezvous("redis://10.0.0.5:7000");
  ASSERT_TRUE(redis.ok());
  EXPECT_EQ(redis->host, "10.0.0.5");
  EXPECT_EQ(redis->port, 7000);
  EXPECT_EQ(parse_rendezvous("redis://db")->port, 6379);
  EXPECT_FALSE(parse_rendezvous("tcp://x").ok());
  EXPECT_FALSE(parse_rendezvous("redis://h:99999").ok());
  EXPECT_FALSE(parse_rendezvous("file:").ok());
  auto missing = ShardGroup::connect({0, 1, "file:/nonexistent/stride-rdv", "p", "127.0.0.1", kTimeout});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(RankFailure, AProcessThatWouldDieOfSigpipeIsRefused) {
  // The test binary keeps SIGPIPE's default action (its forked ranks ignore it).
  const RendezvousDir dir;
  auto group = ShardGroup::connect({0, 1, dir.address(), "p", "127.0.0.1", kTimeout});
  EXPECT_EQ(group.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(group.status().message().find("SIGPIPE"), std::string::npos);
}

}  // namespace
}  // namespace stride::dist

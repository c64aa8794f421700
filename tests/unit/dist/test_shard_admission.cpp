// agree_on_admission across 3 processes on loopback: when every rank took
// its part, every rank goes on; when ranks 1 and 2 failed, every rank
// returns rank 1's error (the first that failed, its code and its own
// message, named), and the ranks are still in step: the next collective
// gives every rank the values all of them contributed.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "dist/shard_step.h"
#include "rank_processes.h"

namespace stride::dist {
namespace {

constexpr int kWorld = 3;

// One request's admission on rank r (failing on the ranks in `failing`), then an allreduce of r + 1.
testing::RankReport admit_then_go_on(const std::string& rendezvous, int r, bool ranks_1_and_2_fail) {
  ShardGroupOptions o;
  o.rank = r;
  o.world = kWorld;
  o.rendezvous = rendezvous;
  o.timeout = std::chrono::seconds(20);
  auto connected = ShardGroup::connect(o);
  if (!connected.ok()) return testing::failed(connected.status());
  ShardGroup& g = **connected;
  Status mine = Status::Ok();
  if (ranks_1_and_2_fail && r == 1) mine = ResourceExhausted("KV pool exhausted: the step needs 720 more pages");
  if (ranks_1_and_2_fail && r == 2) mine = Internal("something else");
  testing::RankReport rep;
  rep.status = agree_on_admission(g, mine);
  int64_t next[1] = {r + 1};
  if (Status s = g.allreduce_max(next, 1); !s.ok()) return testing::failed(s);
  rep.out.push_back((float)next[0]);
  return rep;
}

TEST(ShardAdmission, EveryRankGoesOnWhenAllTookTheirPart) {
  const testing::RendezvousDir dir;
  const auto ranks = testing::run_ranks(kWorld, [&](int r) { return admit_then_go_on(dir.address(), r, false); },
                                        std::chrono::seconds(60));
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
    ASSERT_EQ(ranks[r].report.out.size(), 1u);
    EXPECT_EQ(ranks[r].report.out[0], (float)kWorld);
  }
}

TEST(ShardAdmission, EveryRankGetsTheFirstFailingRanksErrorAndStaysInStep) {
  const testing::RendezvousDir dir;
  const auto ranks = testing::run_ranks(kWorld, [&](int r) { return admit_then_go_on(dir.address(), r, true); },
                                        std::chrono::seconds(60));
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_EQ(ranks[r].report.status.code(), StatusCode::kResourceExhausted) << r;
    EXPECT_EQ(ranks[r].report.status.message(),
              "shard rank 1 of 3 cannot take its part of the request: KV pool exhausted: the step needs 720 more pages")
        << r;
    ASSERT_EQ(ranks[r].report.out.size(), 1u);
    EXPECT_EQ(ranks[r].report.out[0], (float)kWorld) << "rank " << r << " is out of step";
  }
}

}  // namespace
}  // namespace stride::dist

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

// One request's admission on rank r (ranks 1 and 2 failing when asked), then an allreduce of r + 1.
testing::RankReport admit_then_go_on(const testing::RendezvousDir& dir, int r, bool ranks_1_and_2_fail) {
  auto connected = ShardGroup::connect(dir.options(r, kWorld, std::chrono::seconds(20)));
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

// Runs the ranks; every one must report `want` and then the allreduce of every rank's r + 1 (in step).
void expect_every_rank(bool ranks_1_and_2_fail, const Status& want) {
  const testing::RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      kWorld, [&](int r) { return admit_then_go_on(dir, r, ranks_1_and_2_fail); }, std::chrono::seconds(60));
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_EQ(ranks[r].report.status.code(), want.code()) << r;
    EXPECT_EQ(ranks[r].report.status.message(), want.message()) << r;
    ASSERT_EQ(ranks[r].report.out.size(), 1u);
    EXPECT_EQ(ranks[r].report.out[0], (float)kWorld) << "rank " << r << " is out of step";
  }
}

TEST(ShardAdmission, EveryRankGoesOnWhenAllTookTheirPart) { expect_every_rank(false, Status::Ok()); }

TEST(ShardAdmission, EveryRankGetsTheFirstFailingRanksErrorAndStaysInStep) {
  expect_every_rank(true, ResourceExhausted("shard rank 1 of 3 cannot take its part of the request: KV pool "
                                            "exhausted: the step needs 720 more pages"));
}

}  // namespace
}  // namespace stride::dist

// `stride serve`'s shard set: the control channel (rank 0's jobs arrive on
// every worker as sent) and the generations a set is rebuilt under (a worker
// finds the newest one rank 0 opened and joins it), with the ranks as
// processes on loopback meeting through a file rendezvous.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dist/shard_control.h"
#include "dist/shard_link.h"
#include "rank_processes.h"

namespace stride::dist {
namespace {

constexpr int kWorld = 3;

ShardJob sample_job() {
  ShardJob job;
  job.kind = ShardJob::Kind::Generate;
  job.request_id = "cmpl-42";
  for (int i = 0; i < 1000; ++i) job.prompt.push_back(i * 37 % 49152);
  GenerateOptions& g = job.options.generate;
  g.max_tokens = 77;
  g.ignore_eos = true;
  g.stop = {"\n\n", "é end", ""};
  g.sampling.temperature = 0.3f;
  g.sampling.top_k = 7;
  g.sampling.top_p = 0.9f;
  g.sampling.min_p = 0.01f;
  g.sampling.repeat_penalty = 1.1f;
  g.sampling.repeat_last_n = 17;
  g.sampling.frequency_penalty = 0.25f;
  g.sampling.presence_penalty = -0.5f;
  g.sampling.seed = (1ull << 63) + 5;  // beyond a double's exact integers
  g.sampling.logit_bias = {{3, -100.f}, {9, 2.5f}};
  job.options.render_special = true;
  job.options.rank0_may_stop = true;
  job.options.shard_tokens = 4096;
  return job;
}

// What differs between two jobs, "" when nothing.
std::string difference(const ShardJob& a, const ShardJob& b) {
  const GenerateOptions &x = a.options.generate, &y = b.options.generate;
  const SamplingParams &s = x.sampling, &t = y.sampling;
  if (a.kind != b.kind) return "kind";
  if (a.request_id != b.request_id) return "request_id";
  if (a.prompt != b.prompt) return "prompt";
  if (x.max_tokens != y.max_tokens || x.ignore_eos != y.ignore_eos || x.stop != y.stop) return "limits";
  if (a.options.render_special != b.options.render_special || a.options.rank0_may_stop != b.options.rank0_may_stop)
    return "flags";
  if (a.options.shard_tokens != b.options.shard_tokens) return "shard_tokens";
  if (s.temperature != t.temperature || s.top_k != t.top_k || s.top_p != t.top_p || s.min_p != t.min_p) return "sampling";
  if (s.repeat_penalty != t.repeat_penalty || s.repeat_last_n != t.repeat_last_n ||
      s.frequency_penalty != t.frequency_penalty || s.presence_penalty != t.presence_penalty)
    return "penalties";
  if (s.seed != t.seed) return "seed";
  if (s.logit_bias.size() != t.logit_bias.size()) return "logit_bias";
  for (size_t i = 0; i < s.logit_bias.size(); ++i)
    if (s.logit_bias[i].id != t.logit_bias[i].id || s.logit_bias[i].bias != t.logit_bias[i].bias) return "logit_bias";
  return "";
}

TEST(ShardControl, JobsArriveOnEveryWorkerAsRankZeroSentThem) {
  const testing::RendezvousDir dir;
  auto ranks = testing::run_ranks(kWorld, [&](int r) {
    auto group = ShardGroup::connect(dir.options(r, kWorld, std::chrono::seconds(20)));
    if (!group) return testing::failed(group.status());
    const ShardJob want = sample_job();
    for (const ShardJob& sent : {ShardJob{}, want, ShardJob{}}) {
      if (r == 0) {
        if (Status st = send_job(**group, sent); !st.ok()) return testing::failed(st);
        continue;
      }
      auto got = receive_job(**group);
      if (!got) return testing::failed(got.status());
      if (std::string d = difference(*got, sent); !d.empty()) return testing::failed(Internal("differs in " + d));
    }
    return testing::RankReport{};
  }, std::chrono::seconds(60));
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
  }
}

TEST(ShardControl, AMalformedJobIsAnError) {
  EXPECT_EQ(decode_job(1, "{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decode_job(1, "{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decode_job(9, "").status().code(), StatusCode::kInvalidArgument);
}

TEST(ShardGenerations, TheNewestMarkedGenerationIsFound) {
  const testing::RendezvousDir dir;
  ShardGroupOptions o = dir.options(0, 2, std::chrono::seconds(5));
  o.prefix = "set";
  EXPECT_EQ(latest_generation(o).value(), -1);
  for (int64_t g = 0; g < 3; ++g) ASSERT_TRUE(mark_generation(o, g).ok());
  EXPECT_EQ(latest_generation(o).value(), 2);
  o.prefix = "other";
  EXPECT_EQ(latest_generation(o).value(), -1);
}

// Rank 0's link connects generation 0 with the worker; the worker leaves,
// rank 0's next exchange fails, its link opens generation 1, and the worker
// (the same process here, as a restarted one would) finds it and joins.
TEST(ShardGenerations, ALostWorkerRejoinsTheNextGeneration) {
  const testing::RendezvousDir dir;
  const auto deadline = std::chrono::seconds(20);
  auto ranks = testing::run_ranks(2, [&](int r) {
    ShardGroupOptions o = dir.options(r, 2, std::chrono::seconds(5));
    o.prefix = "set";
    auto wait_for = [&](const std::function<bool()>& ready) {
      const auto until = std::chrono::steady_clock::now() + deadline;
      while (!ready() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return ready();
    };
    if (r == 0) {
      ShardLink link(o);
      for (int64_t g = 0; g < 2; ++g) {
        if (!wait_for([&] { return link.group() != nullptr; })) return testing::failed(Internal("no group"));
        if (link.generation() != g) return testing::failed(Internal("generation " + std::to_string(link.generation())));
        int32_t token = 7;
        if (Status st = link.group()->broadcast(&token, sizeof token, 0); !st.ok()) return testing::failed(st);
        if (g == 0) {  // the worker leaves after this one: the next exchange (which needs its part) fails
          float x = 1.f;
          if (link.group()->allreduce_max(&x, 1).ok()) return testing::failed(Internal("no failure"));
          link.reset();
        }
      }
      return testing::RankReport{};
    }
    for (int64_t g = 0; g < 2; ++g) {
      if (!wait_for([&] {
            auto newest = latest_generation(o);
            return newest.ok() && *newest == g;
          }))
        return testing::failed(Internal("generation " + std::to_string(g) + " never opened"));
      ShardGroupOptions joined = o;
      joined.prefix = generation_prefix(o.prefix, g);
      auto group = ShardGroup::connect(joined);
      if (!group) return testing::failed(group.status());
      int32_t token = 0;
      if (Status st = (*group)->broadcast(&token, sizeof token, 0); !st.ok() || token != 7)
        return testing::failed(Internal("broadcast in generation " + std::to_string(g)));
    }
    return testing::RankReport{};
  }, std::chrono::seconds(60));
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    EXPECT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
  }
}

}  // namespace
}  // namespace stride::dist

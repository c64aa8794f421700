// Parallel sampling in the scheduler against Engine::generate on the real
// SmolLM2: branch j of a request (seed s) produces what generate() produces
// alone with seed s + j, its events carry its choice index, the branches fork
// from the prompt's pages, and a request cancelled before its prompt is done
// ends every branch.
#include <gtest/gtest.h>

#include <map>

#include "attention/policy.h"
#include "engine/engine.h"
#include "serving/scheduler.h"

namespace stride::serving {
namespace {

std::unique_ptr<Engine> smol() {
  EngineOptions o;
  o.attention = *parse_policy("dense");
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.threads = 2;
  o.kv_budget_bytes = 64 << 20;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

struct Choice {
  std::string text;
  std::string reason;
  int finishes = 0;
};

// Every choice's text and finish, until `expected` choices finished.
std::map<int, Choice> drain(RequestChannel& ch, int expected) {
  std::map<int, Choice> out;
  int finished = 0;
  while (finished < expected) {
    auto ev = ch.pop(std::chrono::milliseconds(60000));
    if (!ev) break;
    Choice& c = out[ev->index];
    if (ev->kind == EventKind::Token) c.text += ev->text;
    if (ev->kind == EventKind::Finish || ev->kind == EventKind::Error) {
      c.reason = ev->kind == EventKind::Finish ? ev->finish_reason : "error: " + ev->message;
      ++c.finishes;
      ++finished;
    }
  }
  return out;
}

ServeRequest sampled(const Engine& e, const std::string& prompt, int branches) {
  ServeRequest r;
  r.prompt = e.tokenizer()->encode(prompt, e.tokenizer()->add_bos_default());
  r.max_tokens = 12;
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 500;
  r.ignore_eos = true;
  r.branches = branches;
  return r;
}

TEST(SchedulerBranches, EachBranchEqualsGenerateWithItsSeed) {
  auto engine = smol();
  ASSERT_TRUE(engine);
  std::string prompt;  // several KV pages: the branches share the full ones
  for (int i = 0; i < 6; ++i) prompt += "Once upon a time, in a land far away, there lived a dragon who ";
  const ServeRequest r = sampled(*engine, prompt, 3);
  std::vector<std::string> alone;
  for (int j = 0; j < 3; ++j) {
    GenerateOptions g;
    g.max_tokens = r.max_tokens;
    g.ignore_eos = true;
    g.sampling = r.sampling;
    g.sampling.seed = r.sampling.seed + (uint64_t)j;
    auto got = engine->generate(r.prompt, g, nullptr);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    alone.push_back(got->text);
  }
  Metrics metrics;
  SchedulerOptions so;
  so.max_batch = 4;
  Scheduler sched(*engine, so, metrics);
  const KvStats before = engine->kv().stats();
  auto ch = std::make_shared<RequestChannel>(r);
  ASSERT_TRUE(sched.submit(ch).ok());
  sched.start();
  const std::map<int, Choice> got = drain(*ch, 3);
  sched.drain_and_stop();
  ASSERT_EQ(got.size(), 3u);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(got.at(j).text, alone[(size_t)j]) << "branch " << j;
    EXPECT_EQ(got.at(j).reason, "length");
    EXPECT_EQ(got.at(j).finishes, 1);
  }
  const KvStats after = engine->kv().stats();
  EXPECT_EQ(after.forks - before.forks, 2);
  EXPECT_GT(after.fork_pages_shared - before.fork_pages_shared, 0);
  EXPECT_EQ(after.pages_used, 0);
  EXPECT_EQ(metrics.prompt_tokens.load(), (int64_t)r.prompt.size());  // the prompt ran once
}

TEST(SchedulerBranches, CancelledBeforeThePromptIsDoneEndsEveryBranch) {
  auto engine = smol();
  ASSERT_TRUE(engine);
  Metrics metrics;
  SchedulerOptions so;
  so.max_batch = 4;
  Scheduler sched(*engine, so, metrics);
  ServeRequest r = sampled(*engine, "A long story about the sea.", 4);
  r.more_prompts.push_back(r.prompt);  // a batch of two prompts: eight choices
  auto ch = std::make_shared<RequestChannel>(r);
  ch->cancel();
  ASSERT_TRUE(sched.submit(ch).ok());
  sched.start();
  const std::map<int, Choice> got = drain(*ch, 8);
  sched.drain_and_stop();
  ASSERT_EQ(got.size(), 8u);
  for (const auto& [index, c] : got) {
    EXPECT_EQ(c.reason, "cancelled") << index;
    EXPECT_EQ(c.finishes, 1) << index;
  }
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

}  // namespace
}  // namespace stride::serving

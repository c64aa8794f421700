// The scheduler against Engine::generate on the real SmolLM2: greedy requests
// batched together (and preempted under a tiny KV pool) produce the text each
// produces alone; cancelled requests free their pages.
#include <gtest/gtest.h>

#include "attention/policy.h"
#include "engine/engine.h"
#include "serving/scheduler.h"

namespace stride::serving {
namespace {

std::unique_ptr<Engine> smol(const std::string& budget_bytes_text, int64_t budget,
                             bool prefix_cache = true, const char* policy = "dense") {
  EngineOptions o;
  o.attention = *parse_policy(policy);
  o.prefix_cache = prefix_cache;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.threads = 2;
  o.kv_budget_bytes = budget;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << budget_bytes_text << ": " << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

ServeRequest greedy(const Engine& e, const std::string& prompt, int max_tokens) {
  ServeRequest r;
  r.prompt = e.tokenizer()->encode(prompt, e.tokenizer()->add_bos_default());
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

// Collects a channel's events: (text, finish reason).
std::pair<std::string, std::string> drain(RequestChannel& ch) {
  std::string text;
  for (;;) {
    auto ev = ch.pop(std::chrono::milliseconds(60000));
    if (!ev) return {text, "no event"};
    if (ev->kind == EventKind::Token) text += ev->text;
    if (ev->kind == EventKind::Finish) return {text, ev->finish_reason};
    if (ev->kind == EventKind::Error) return {text, "error: " + ev->message};
  }
}

void run_batch_equals_alone(int64_t budget, int max_tokens) {
  auto engine = smol(std::to_string(budget), budget);
  ASSERT_TRUE(engine);
  const std::vector<std::string> prompts = {"The capital of France is", "Once upon a time",
                                            "def fibonacci(n):", "My favourite colour is"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    GenerateOptions g;
    g.max_tokens = max_tokens;
    g.ignore_eos = true;
    g.sampling.temperature = 0;
    auto r = engine->generate(greedy(*engine, p, max_tokens).prompt, g, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    alone.push_back(r->text);
  }
  Metrics metrics;
  SchedulerOptions so;
  so.max_batch = 4;
  Scheduler sched(*engine, so, metrics);
  sched.start();
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (const auto& p : prompts) {
    chans.push_back(std::make_shared<RequestChannel>(greedy(*engine, p, max_tokens)));
    ASSERT_TRUE(sched.submit(chans.back()).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto [text, reason] = drain(*chans[i]);
    EXPECT_EQ(reason, "length");
    EXPECT_EQ(text, alone[i]) << prompts[i];
  }
  sched.drain_and_stop();
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
  EXPECT_EQ(metrics.generation_tokens.load(), (int64_t)prompts.size() * max_tokens);
  EXPECT_EQ(metrics.preemptions.load(), 0);
}

TEST(Scheduler, BatchedGreedyEqualsAlone) { run_batch_equals_alone(64 << 20, 10); }

// Generated ids and per-token log-probs (top 2) of one request.
std::vector<TokenLogprob> drain_logprobs(RequestChannel& ch, std::string* reason) {
  std::vector<TokenLogprob> out;
  for (;;) {
    auto ev = ch.pop(std::chrono::milliseconds(60000));
    if (!ev) return out;
    out.insert(out.end(), ev->logprobs.begin(), ev->logprobs.end());
    if (ev->kind != EventKind::Token) {
      *reason = ev->kind == EventKind::Finish ? ev->finish_reason : "error: " + ev->message;
      return out;
    }
  }
}

// 30 layers of 24 KiB pages: 3 MiB is 128 pages, ~4 pages per layer for one
// sequence: two admitted sequences growing past 64 tokens (3 pages a layer)
// cannot both fit, so one is preempted and recomputed. Recompute runs the
// tokens as a prefill; on this Q4_1 model the engine's prefill and decode
// log-probs differ by up to ~0.2 (measured 2026-11-30; quantized matmul paths),
// so greedy output must agree token for token until a near tie (top-2 gap < 0.3).
// The prefix cache is off here so a recompute is a full prefill (the cached
// case is in test_scheduler_prefix.cpp).
TEST(Scheduler, PreemptionUnderTinyPoolKeepsOutput) {
  auto engine = smol("3M", 3 << 20, /*prefix_cache=*/false);
  ASSERT_TRUE(engine);
  Metrics metrics;
  SchedulerOptions so;
  so.max_batch = 4;
  Scheduler sched(*engine, so, metrics);
  sched.start();
  const std::vector<std::string> prompts = {"The capital of France is", "Once upon a time",
                                            "def fibonacci(n):", "My favourite colour is"};
  auto request = [&](const std::string& p) {
    ServeRequest r = greedy(*engine, p, 70);
    r.top_logprobs = 2;
    return std::make_shared<RequestChannel>(r);
  };
  std::vector<std::vector<TokenLogprob>> alone;
  for (const auto& p : prompts) {
    auto ch = request(p);
    ASSERT_TRUE(sched.submit(ch).ok());
    std::string reason;
    alone.push_back(drain_logprobs(*ch, &reason));
    ASSERT_EQ(reason, "length");
  }
  EXPECT_EQ(metrics.preemptions.load(), 0);
  sched.drain_and_stop();
  // The batch goes to a scheduler that has not started: its first
  // take_incoming() sees all four requests at once. Submitting to the running
  // one let its thread pick up the first request alone (or the first two, ...)
  // depending on when it woke, so batch composition, the victims, where their
  // recompute chunks start and the number of preemptions (5 or 6 measured)
  // depended on thread timing, and a failure did not reproduce.
  Metrics batch_metrics;
  Scheduler batch(*engine, so, batch_metrics);
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (const auto& p : prompts) {
    chans.push_back(request(p));
    ASSERT_TRUE(batch.submit(chans.back()).ok());
  }
  batch.start();
  // A preempted sequence is recomputed by a prefill; prefill and decode sum
  // in the same order, so every token and log-prob equals the solo run's.
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::string reason;
    auto together = drain_logprobs(*chans[i], &reason);
    EXPECT_EQ(reason, "length");
    ASSERT_EQ(together.size(), 70u);
    ASSERT_EQ(alone[i].size(), 70u);
    for (size_t k = 0; k < 70; ++k) {
      ASSERT_EQ(together[k].id, alone[i][k].id)
          << prompts[i] << ": token " << k << " (preemptions so far " << batch_metrics.preemptions.load() << ")";
      ASSERT_EQ(together[k].logprob, alone[i][k].logprob)
          << prompts[i] << ": token " << k << " (preemptions so far " << batch_metrics.preemptions.load() << ")";
    }
  }
  batch.drain_and_stop();
  EXPECT_GT(batch_metrics.preemptions.load(), 0);
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

TEST(Scheduler, CancelAndTimeoutFreePages) {
  auto engine = smol("64M", 64 << 20);
  ASSERT_TRUE(engine);
  Metrics metrics;
  Scheduler sched(*engine, SchedulerOptions{}, metrics);
  sched.start();
  auto cancelled = std::make_shared<RequestChannel>(greedy(*engine, "Count to a thousand:", 2000));
  ServeRequest timed = greedy(*engine, "Tell me a story:", 2000);
  timed.deadline = Clock::now() + std::chrono::milliseconds(300);
  auto timeout = std::make_shared<RequestChannel>(timed);
  ASSERT_TRUE(sched.submit(cancelled).ok());
  ASSERT_TRUE(sched.submit(timeout).ok());
  auto first = cancelled->pop(std::chrono::milliseconds(60000));
  ASSERT_TRUE(first.has_value());
  cancelled->cancel();
  EXPECT_EQ(drain(*cancelled).second, "cancelled");
  EXPECT_EQ(drain(*timeout).second, "timeout");
  sched.drain_and_stop();
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

// A sliding window keeps a sequence's pages bounded, but a whole prompt
// chunk needs a page for every token it writes: under 3 MiB (~4 pages a
// layer) a 300-token chunk cannot fit alone, so the scheduler halves it
// until it does. The tokens and log-probs equal a large pool's, where the
// prompt runs as one chunk.
TEST(Scheduler, LonePromptChunkIsHalvedToFit) {
  auto run = [](int64_t budget, int64_t* splits) {
    auto engine = smol(std::to_string(budget), budget, /*prefix_cache=*/false, "window:size=64");
    if (!engine) return std::vector<TokenLogprob>{};
    Metrics metrics;
    SchedulerOptions so;
    so.step_tokens = 512;
    Scheduler sched(*engine, so, metrics);
    std::string prompt;
    for (int i = 0; i < 60; ++i) prompt += "The river runs past the old mill. ";
    ServeRequest r = greedy(*engine, prompt, 8);
    r.top_logprobs = 2;
    EXPECT_GT(r.prompt.size(), 300u);
    auto ch = std::make_shared<RequestChannel>(r);
    EXPECT_TRUE(sched.submit(ch).ok());
    sched.start();
    std::string reason;
    auto got = drain_logprobs(*ch, &reason);
    EXPECT_EQ(reason, "length");
    sched.drain_and_stop();
    *splits = metrics.split_prefills.load();
    return got;
  };
  int64_t big_splits = 0, small_splits = 0;
  const auto want = run(256 << 20, &big_splits);
  const auto got = run(3 << 20, &small_splits);
  EXPECT_EQ(big_splits, 0);
  EXPECT_GT(small_splits, 0);
  ASSERT_EQ(want.size(), 8u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k].id, want[k].id) << "token " << k;
    EXPECT_EQ(got[k].logprob, want[k].logprob) << "token " << k;
  }
}

TEST(Scheduler, BoundedQueueRefuses) {
  auto engine = smol("16M", 16 << 20);
  ASSERT_TRUE(engine);
  Metrics metrics;
  SchedulerOptions so;
  so.max_queue = 0;  // nothing may wait: submit() refuses before the loop runs
  Scheduler sched(*engine, so, metrics);
  auto ch = std::make_shared<RequestChannel>(greedy(*engine, "Hi", 1));
  EXPECT_EQ(sched.submit(ch).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace stride::serving

// Prompt log-probs (echo with logprobs) in the scheduler on the real SmolLM2:
// one per prompt token, the first without a value; a prompt scored in a batch
// under a pool small enough to preempt gets the log-probs it gets alone (and
// the same continuation); max_tokens 0 scores and generates nothing.
// Their agreement with llama.cpp is checked end to end in
// tests/python/server/test_logit_bias_echo_fim.py.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/policy.h"
#include "engine/engine.h"
#include "serving/scheduler.h"

namespace stride::serving {
namespace {

std::unique_ptr<Engine> smol(int64_t budget) {
  EngineOptions o;
  o.attention = *parse_policy("dense");
  o.prefix_cache = false;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.threads = 2;
  o.kv_budget_bytes = budget;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

struct Outcome {
  std::vector<TokenLogprob> prompt;  // prompt log-probs
  std::vector<int32_t> generated;
  std::string finish;
  int completion_tokens = -1;
};

Outcome drain(RequestChannel& ch) {
  Outcome o;
  for (;;) {
    auto ev = ch.pop(std::chrono::milliseconds(120000));
    if (!ev) return o;
    if (ev->kind == EventKind::Token) {
      if (!ev->prompt_logprobs.empty()) {
        EXPECT_TRUE(o.prompt.empty()) << "prompt log-probs come once";
        EXPECT_TRUE(o.generated.empty()) << "prompt log-probs come before the first token";
        o.prompt = ev->prompt_logprobs;
      }
      o.generated.insert(o.generated.end(), ev->token_ids.begin(), ev->token_ids.end());
    }
    if (ev->kind == EventKind::Error) o.finish = "error: " + ev->message;
    if (ev->kind != EventKind::Token) {
      if (ev->kind == EventKind::Finish) o.finish = ev->finish_reason, o.completion_tokens = ev->completion_tokens;
      return o;
    }
  }
}

ServeRequest scoring(const Engine& e, const std::string& text, int max_tokens, int top) {
  ServeRequest r;
  r.prompt = e.tokenizer()->encode(text, e.tokenizer()->add_bos_default());
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.prompt_logprobs = top;
  return r;
}

// Prompts of 70-90 tokens: more than one scoring chunk each.
std::vector<std::string> prompts() {
  std::vector<std::string> out;
  for (const char* topic : {"the sea", "a mountain", "the city at night", "an old library"}) {
    std::string p = "Write a short description of ";
    for (int i = 0; i < 6; ++i) p += std::string(topic) + ", then say more about " + topic + ". ";
    out.push_back(p);
  }
  return out;
}

TEST(SchedulerScoring, EveryPromptTokenOnceFirstWithoutValue) {
  auto engine = smol(64 << 20);
  ASSERT_TRUE(engine);
  Metrics metrics;
  Scheduler sched(*engine, SchedulerOptions{}, metrics);
  sched.start();
  const ServeRequest r = scoring(*engine, prompts()[0], 0, 3);
  auto ch = std::make_shared<RequestChannel>(r);
  ASSERT_TRUE(sched.submit(ch).ok());
  const Outcome o = drain(*ch);
  EXPECT_EQ(o.finish, "length");
  EXPECT_EQ(o.completion_tokens, 0);
  EXPECT_TRUE(o.generated.empty());
  ASSERT_EQ(o.prompt.size(), r.prompt.size());
  ASSERT_GT(r.prompt.size(), 64u);
  EXPECT_TRUE(std::isnan(o.prompt[0].logprob));
  EXPECT_TRUE(o.prompt[0].top.empty());
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    EXPECT_EQ(o.prompt[i].id, r.prompt[i]);
    if (i == 0) continue;
    EXPECT_LE(o.prompt[i].logprob, 0.0f);
    ASSERT_EQ(o.prompt[i].top.size(), 3u);
    // The token is never more likely than the best alternative.
    EXPECT_LE(o.prompt[i].logprob, o.prompt[i].top[0].logprob + 1e-6f);
  }
  sched.drain_and_stop();
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

// A prompt whose last token is alone in its chunk (65 = 64 + 1 tokens, and
// 1 token) is still scored from its own rows, and what follows it is the
// continuation an unscored request gets.
TEST(SchedulerScoring, LastPromptTokenAloneInItsChunk) {
  auto engine = smol(64 << 20);
  ASSERT_TRUE(engine);
  Metrics metrics;
  Scheduler sched(*engine, SchedulerOptions{}, metrics);
  sched.start();
  const std::vector<int32_t> long_prompt = scoring(*engine, prompts()[1], 0, 0).prompt;
  ASSERT_GE(long_prompt.size(), 65u);
  for (const size_t n : {(size_t)65, (size_t)1}) {
    ServeRequest r = scoring(*engine, "", 6, 1);
    r.prompt.assign(long_prompt.begin(), long_prompt.begin() + (std::ptrdiff_t)n);
    auto ch = std::make_shared<RequestChannel>(r);
    ASSERT_TRUE(sched.submit(ch).ok());
    const Outcome scored = drain(*ch);
    ServeRequest plain = r;
    plain.prompt_logprobs = -1;
    auto pch = std::make_shared<RequestChannel>(plain);
    ASSERT_TRUE(sched.submit(pch).ok());
    const Outcome unscored = drain(*pch);
    EXPECT_EQ(scored.finish, "length") << n;
    ASSERT_EQ(scored.prompt.size(), n);
    for (size_t i = 1; i < n; ++i) EXPECT_TRUE(std::isfinite(scored.prompt[i].logprob)) << n << ": " << i;
    EXPECT_EQ(scored.generated, unscored.generated) << n;
  }
  sched.drain_and_stop();
}

TEST(SchedulerScoring, BatchedAndPreemptedScoringEqualsAlone) {
  auto engine = smol(4 << 20);  // room for about one prompt and its continuation
  ASSERT_TRUE(engine);
  SchedulerOptions so;
  so.max_batch = 4;
  const auto texts = prompts();
  std::vector<Outcome> alone;
  std::vector<std::vector<int32_t>> unscored;
  {
    Metrics metrics;
    Scheduler sched(*engine, so, metrics);
    sched.start();
    for (const auto& t : texts) {
      auto ch = std::make_shared<RequestChannel>(scoring(*engine, t, 12, 2));
      ASSERT_TRUE(sched.submit(ch).ok());
      alone.push_back(drain(*ch));
      ASSERT_EQ(alone.back().finish, "length");
      ServeRequest plain = scoring(*engine, t, 12, 2);
      plain.prompt_logprobs = -1;
      auto pch = std::make_shared<RequestChannel>(plain);
      ASSERT_TRUE(sched.submit(pch).ok());
      const Outcome p = drain(*pch);
      EXPECT_TRUE(p.prompt.empty());
      unscored.push_back(p.generated);
    }
    sched.drain_and_stop();
  }
  Metrics batch_metrics;
  Scheduler batch(*engine, so, batch_metrics);
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (const auto& t : texts) {
    chans.push_back(std::make_shared<RequestChannel>(scoring(*engine, t, 12, 2)));
    ASSERT_TRUE(batch.submit(chans.back()).ok());
  }
  batch.start();
  for (size_t i = 0; i < texts.size(); ++i) {
    const Outcome o = drain(*chans[i]);
    EXPECT_EQ(o.finish, "length");
    EXPECT_EQ(o.generated, alone[i].generated) << texts[i];
    EXPECT_EQ(alone[i].generated, unscored[i]) << "scoring changes no generated token";
    ASSERT_EQ(o.prompt.size(), alone[i].prompt.size());
    for (size_t k = 1; k < o.prompt.size(); ++k) {
      ASSERT_EQ(o.prompt[k].id, alone[i].prompt[k].id);
      ASSERT_NEAR(o.prompt[k].logprob, alone[i].prompt[k].logprob, 1e-4f) << texts[i] << ": token " << k;
    }
  }
  batch.drain_and_stop();
  EXPECT_GT(batch_metrics.preemptions.load(), 0);
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

}  // namespace
}  // namespace stride::serving

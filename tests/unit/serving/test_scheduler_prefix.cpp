// The scheduler with the prefix cache on the real SmolLM2: a request sharing
// a long prefix with an earlier one prefills only the rest and produces the
// same greedy tokens as a scheduler without the cache; preempted sequences
// reuse their own cached pages when recomputed and still finish correctly.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "serving/scheduler.h"

namespace stride::serving {
namespace {

std::unique_ptr<Engine> smol(int64_t budget, bool prefix_cache) {
  EngineOptions o;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.threads = 2;
  o.kv_budget_bytes = budget;
  o.prefix_cache = prefix_cache;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

std::shared_ptr<RequestChannel> greedy(const Engine& e, const std::string& prompt, int max_tokens) {
  ServeRequest r;
  r.prompt = e.tokenizer()->encode(prompt, e.tokenizer()->add_bos_default());
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.top_logprobs = 2;
  return std::make_shared<RequestChannel>(r);
}

// The generated tokens (with log-probs) and the finish reason of one request.
std::pair<std::vector<TokenLogprob>, std::string> drain(RequestChannel& ch) {
  std::vector<TokenLogprob> out;
  for (;;) {
    auto ev = ch.pop(std::chrono::milliseconds(120000));
    if (!ev) return {out, "no event"};
    out.insert(out.end(), ev->logprobs.begin(), ev->logprobs.end());
    if (ev->kind == EventKind::Finish) return {out, ev->finish_reason};
    if (ev->kind == EventKind::Error) return {out, "error: " + ev->message};
  }
}

std::vector<int32_t> ids_of(const std::vector<TokenLogprob>& t) {
  std::vector<int32_t> ids;
  for (const auto& x : t) ids.push_back(x.id);
  return ids;
}

const std::string kSystem =
    "You are the archivist of a small river town. You answer questions about the town's ledgers, "
    "which record the harvests, the bridge tolls, the weather of every season and the names of the "
    "clerks who kept them. Answer briefly and plainly, and never invent records that are not in the "
    "ledgers. The ledgers begin in the year the stone bridge was built and end with the great flood.\n";

// Runs the prompts one after another; returns each one's generated ids.
std::vector<std::vector<int32_t>> run_sequentially(Engine& engine, const std::vector<std::string>& prompts,
                                                   Metrics& metrics) {
  SchedulerOptions so;
  Scheduler sched(engine, so, metrics);
  sched.start();
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : prompts) {
    auto ch = greedy(engine, p, 16);
    EXPECT_TRUE(sched.submit(ch).ok());
    auto [tokens, reason] = drain(*ch);
    EXPECT_EQ(reason, "length");
    out.push_back(ids_of(tokens));
  }
  sched.drain_and_stop();
  return out;
}

TEST(SchedulerPrefix, SharedPrefixSkipsPrefillAndKeepsOutput) {
  const std::vector<std::string> prompts = {kSystem + "Question: how many barrels of apples were counted?",
                                            kSystem + "Question: who kept the ledgers in the flood?"};
  auto cached = smol(64 << 20, true);
  auto plain = smol(64 << 20, false);
  ASSERT_TRUE(cached && plain);
  const int64_t shared = (int64_t)cached->tokenizer()->encode(kSystem, cached->tokenizer()->add_bos_default()).size();
  ASSERT_GT(shared, 64);
  Metrics m_cached, m_plain;
  const auto with_cache = run_sequentially(*cached, prompts, m_cached);
  const auto without = run_sequentially(*plain, prompts, m_plain);
  EXPECT_EQ(with_cache, without);
  // Every whole page of the shared part (the last shared token may merge with
  // the question's first, so one token less) came from the cache.
  EXPECT_GE(m_cached.kv().prefix_hit_tokens, (shared - 1) / 32 * 32);
  EXPECT_LT(m_cached.kv().prefix_hit_tokens, shared + 32);
  EXPECT_GT(m_cached.kv().pages_cached, 0);
  EXPECT_EQ(m_plain.kv().prefix_query_tokens, 0);
  EXPECT_EQ(cached->kv().stats().pages_used, 0);
  EXPECT_EQ(plain->kv().stats().pages_cached, 0);
}

// 3 MiB is 128 pages: four sequences growing to ~76 tokens (3 pages a layer)
// cannot all fit, so some are preempted; their recompute reuses their own
// cached full pages and prefills the rest. Batched decode, prefill and decode
// differ numerically on this Q4_1 model (and batch composition depends on
// timing), so greedy runs may flip a near tie: every agreed token's log-prob
// stays close to the solo run's, and where the runs part the solo run's top
// two were within twice that bound.
TEST(SchedulerPrefix, PreemptedSequencesReuseTheirPages) {
  auto engine = smol(3 << 20, true);
  ASSERT_TRUE(engine);
  Metrics metrics;
  SchedulerOptions so;
  so.max_batch = 4;
  Scheduler sched(*engine, so, metrics);
  sched.start();
  const std::vector<std::string> prompts = {"The capital of France is", "Once upon a time",
                                            "def fibonacci(n):", "My favourite colour is"};
  std::vector<std::vector<TokenLogprob>> alone;
  for (const auto& p : prompts) {
    auto ch = greedy(*engine, p, 70);
    ASSERT_TRUE(sched.submit(ch).ok());
    auto [tokens, reason] = drain(*ch);
    ASSERT_EQ(reason, "length");
    alone.push_back(tokens);
  }
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (const auto& p : prompts) {
    chans.push_back(greedy(*engine, p, 70));
    ASSERT_TRUE(sched.submit(chans.back()).ok());
  }
  constexpr float kLogprobBound = 0.25f;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto [together, reason] = drain(*chans[i]);
    EXPECT_EQ(reason, "length");
    ASSERT_EQ(together.size(), 70u);
    size_t k = 0;
    for (; k < 70 && together[k].id == alone[i][k].id; ++k)
      EXPECT_LT(std::fabs(together[k].logprob - alone[i][k].logprob), kLogprobBound) << prompts[i] << " token " << k;
    if (k == 70) continue;
    ASSERT_GE(alone[i][k].top.size(), 2u);
    EXPECT_LT(alone[i][k].top[0].logprob - alone[i][k].top[1].logprob, 2 * kLogprobBound)
        << prompts[i] << ": diverged at token " << k << " without a near tie";
  }
  sched.drain_and_stop();
  EXPECT_GT(metrics.preemptions.load(), 0);
  EXPECT_GT(metrics.kv().prefix_hit_tokens, 0) << "recompute reused cached pages";
  EXPECT_EQ(engine->kv().stats().pages_used, 0);
}

}  // namespace
}  // namespace stride::serving

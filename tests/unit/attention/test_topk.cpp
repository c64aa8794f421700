// Top-k (Quest) sparsity: the policy grammar, the page selection against a
// brute-force selection written from the definition, and KvManager output
// against the naive reference masked with that selection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kv/kv_manager.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "attention/topk_selector.h"
#include "../kv/cache_test_util.h"
#include "topk_check.h"
#include "core/thread_pool.h"

namespace stride {

using namespace testing_util;

TEST(TopkPolicy, ParsesAndPrints) {
  auto p = parse_policy("topk:sparsity=0.9,block=64,select=block");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->kind, PolicyKind::TopK);
  EXPECT_DOUBLE_EQ(p->sparsity, 0.9);
  EXPECT_EQ(p->block, 64);
  EXPECT_TRUE(p->select_per_block);
  auto d = parse_policy("topk");
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->sparsity, 0.9);  // the seed default
  EXPECT_EQ(d->block, 0);              // the page size
  EXPECT_FALSE(d->select_per_block);   // per query: schedule-invariant
  auto rt = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(*rt, *p);
  for (const char* bad : {"topk:sparsity=1", "topk:sparsity=-0.1", "topk:sparsity=x", "topk:block=0",
                          "topk:k=2048", "topk:sparsity=0.5,sparsity=0.5", "topk:select=row",
                          "topk:mass=0", "topk:mass=1", "topk:mass=0.9,sparsity=0.9", "topk:min=64",
                          "topk:max=64", "topk:mass=0.9,min=128,max=64", "topk:mass=0.9,max=-1"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
  auto m = parse_policy("topk:mass=0.95,min=64,max=1024,window=64");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_DOUBLE_EQ(m->mass, 0.95);
  EXPECT_EQ(m->min_tokens, 64);
  EXPECT_EQ(m->max_tokens, 1024);
  auto mrt = parse_policy(policy_to_string(*m));
  ASSERT_TRUE(mrt.ok()) << policy_to_string(*m);
  EXPECT_EQ(*mrt, *m);
  // The predicate is causal: the selection is the plan's, and nothing is released.
  EXPECT_TRUE(policy_attends(*p, 100, 0));
  EXPECT_FALSE(policy_attends(*p, 100, 101));
  EXPECT_TRUE(policy_keeps(*p, 0, 1 << 30));
}

TEST(TopkPolicy, BlockMustBeAMultipleOfThePageSize) {
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = 1;
  cfg.head_dim_k = cfg.head_dim_v = 8;
  cfg.page_size = 32;
  cfg.budget_bytes = 1 << 20;
  cfg.layer_policies = {*parse_policy("topk:block=48")};
  auto c = KvManager::create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("multiple of the KV page size"), std::string::npos);
  cfg.layer_policies = {*parse_policy("topk:block=64")};
  EXPECT_TRUE(KvManager::create(cfg).ok());
}

TEST(TopkPolicy, SparsityZeroIsDense) {
  Shape s;
  const AttentionParams p = params_for(s);
  const int n = 300;
  const auto [q, k, v] = random_inputs(s, n, 1);
  ThreadPool threads(2);
  for (const auto& chunks : {std::vector<int>{300}, split_into(n, {100, 1, 1, 7})}) {
    auto dense = make_cache(s, {PolicySpec{}});
    const auto a = run_chunks(*dense, s, p, q, k, v, chunks, threads);
    for (const char* policy : {"topk:sparsity=0", "topk:sparsity=0,select=block"}) {
      auto topk = make_cache(s, {*parse_policy(policy)});
      const auto b = run_chunks(*topk, s, p, q, k, v, chunks, threads);
      EXPECT_LT(max_abs_diff(a, b), 1e-6f) << policy;
      // Per-block selection reads what dense reads, block for block.
      if (std::string(policy).find("block") != std::string::npos) {
        EXPECT_EQ(topk->stats().pages_read, dense->stats().pages_read);
      }
    }
  }
}

TEST(TopkPolicy, PrefillMatchesMaskedReferenceOverBruteForceSelection) {
  check_topk("topk:sparsity=0.75", 260, {260}, 2);
  check_topk("topk:sparsity=0.6,block=32,sinks=20,window=40", 300, {130, 170}, 2);
  check_topk("topk:sparsity=0.75,select=block", 260, {260}, 2);
  check_topk("topk:sparsity=0.6,block=32,sinks=20,window=40,select=block", 300, {130, 170}, 2);
  check_topk("topk:mass=0.8", 260, {260}, 2);
  check_topk("topk:mass=0.9,min=48,max=96,block=32,sinks=20,window=40", 300, {130, 170}, 2);
  check_topk("topk:mass=0.7,select=block", 260, {100, 160}, 2);
}

// Per-query selection (the default): a query's pages and output do not depend
// on the chunk it was computed in; per-block selection (select=block) does.
TEST(TopkPolicy, PerQuerySelectionIsTheSameInEveryChunking) {
  Shape s;
  const AttentionParams p = params_for(s);
  const int n = 300;
  const auto [q, k, v] = random_inputs(s, n, 41);
  ThreadPool threads(2);
  for (const char* policy : {"topk:sparsity=0.8", "topk:sparsity=0.8,select=block"}) {
    auto whole = make_cache(s, {*parse_policy(policy)});
    auto cut = make_cache(s, {*parse_policy(policy)});
    const auto a = run_chunks(*whole, s, p, q, k, v, {n}, threads);
    const auto b = run_chunks(*cut, s, p, q, k, v, split_into(n, {7, 33, 1}), threads);
    const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    EXPECT_EQ(same, std::string(policy).find("block") == std::string::npos) << policy;
  }
}

TEST(TopkMass, PicksTheFewestCandidatesThatReachTheMass) {
  // Masses 1 (fixed) and 1, e^-1, e^-2, e^-10 (candidates): total 2.5032.
  const std::vector<float> fixed = {0.f}, ranked = {0.f, -1.f, -2.f, -10.f};
  EXPECT_EQ(topk_mass_picks(0.39, fixed, ranked, 0, 4), 0);  // the fixed 1 already is 40%
  EXPECT_EQ(topk_mass_picks(0.5, fixed, ranked, 0, 4), 1);   // 2 / 2.5032 = 0.799
  EXPECT_EQ(topk_mass_picks(0.9, fixed, ranked, 0, 4), 2);   // 2.368 / 2.5032 = 0.946
  EXPECT_EQ(topk_mass_picks(0.99, fixed, ranked, 0, 4), 3);  // 2.503 / 2.5032 > 0.99
  EXPECT_EQ(topk_mass_picks(0.5, fixed, ranked, 3, 4), 3);   // min picks
  EXPECT_EQ(topk_mass_picks(0.99, fixed, ranked, 0, 2), 2);  // max picks
  EXPECT_EQ(topk_mass_picks(0.9, {}, {}, 2, 4), 0);          // nothing to pick
}

// mass=P reads few pages where one key holds the mass and many where the
// scores are flat: the budget follows the query, not a fixed share.
TEST(TopkMass, ReadsFewPagesForAPeakAndManyForFlatScores) {
  Shape s;
  const int n = 512, needle = 200, last = n - 1;
  auto q = random_vec((size_t)n * s.n_head * s.hd, 61);
  const auto k = random_vec((size_t)n * s.n_kv * s.hd, 62);
  for (float& x : q) x *= 0.05f;  // flat: every score near 0
  const PolicySpec pol = *parse_policy("topk:mass=0.9");
  auto count = [](const std::vector<bool>& sel) { return std::count(sel.begin(), sel.end(), true); };
  const int64_t flat = count(brute_selection(pol, s, q, k, last, 1, 0, n));
  // The heads of kv head 0 ask u (|u|^2 ~ 64); the needle key 4u scores ~32
  // after scaling, far above any random page's bound (~13).
  std::vector<float> qp = q, kp = k;
  const float* u0 = &q[(size_t)last * s.n_head * s.hd];
  std::vector<float> u(u0, u0 + s.hd);
  for (float& x : u) x *= 20.f;
  for (int h = 0; h < 3; ++h) std::copy(u.begin(), u.end(), &qp[((size_t)last * s.n_head + h) * s.hd]);
  for (int c = 0; c < s.hd; ++c) kp[(size_t)needle * s.n_kv * s.hd + c] = 4.f * u[c];
  const std::vector<bool> peak = brute_selection(pol, s, qp, kp, last, 1, 0, n);
  EXPECT_TRUE(peak[needle / s.page]) << "the needle's page is read";
  EXPECT_LE(count(peak), 4);                       // sink, local pages, the needle
  EXPECT_GE(flat, (int64_t)(0.8 * (n / s.page)));  // flat mass: most pages
  // The cache reads what the definition says in both cases.
  const auto v = random_vec((size_t)n * s.n_kv * s.hd, 63);
  check_topk_inputs("topk:mass=0.9", qp, kp, v, n, {n - 1, 1});
  check_topk_inputs("topk:mass=0.9", q, k, v, n, {n - 1, 1});
}

TEST(TopkPolicy, DecodeMatchesMaskedReferenceOverBruteForceSelection) {
  check_topk("topk:sparsity=0.8", 400, split_into(400, {200, 1}), 2);
  check_topk("topk:sparsity=0.9,block=32", 300, split_into(300, {100, 1}), 1);
  // Long per-head lists are split across threads and merged (flash-decoding).
  check_topk("topk:sparsity=0.5", 653, {650, 1, 1, 1}, 2);
  check_topk("topk:sparsity=0.5", 653, {650, 1, 1, 1}, 3);
  check_topk("topk:mass=0.9", 400, split_into(400, {200, 1}), 2);
  check_topk("topk:mass=0.5,min=32,max=160", 653, {650, 1, 1, 1}, 3);
}

TEST(TopkPolicy, DecodeReadsAboutOneMinusSparsityOfThePages) {
  // 960-token prompt then 64 decode steps: 60..64 pages of 16 tokens.
  const KvStats st = check_topk("topk:sparsity=0.9", 1024, split_into(1024, {960, 1}), 2);
  // Prefill blocks read at least their sink + local pages; decode ~10%. Take
  // decode alone by running the same prefill-only once more.
  const KvStats pre = check_topk("topk:sparsity=0.9", 960, {960}, 2);
  const double read = (double)(st.pages_read - pre.pages_read);
  const double present = (double)(st.pages_present - pre.pages_present);
  EXPECT_GT(read / present, 0.08);
  EXPECT_LT(read / present, 0.13);  // ceil(0.1 * 64) = 7 of 61..64 pages
}

TEST(TopkPolicy, SelectsThePageHoldingTheNeedle) {
  // One key matches the query strongly; at 90% sparsity (4 of 32 pages: sink,
  // local and two chosen) its page must still be read.
  Shape s;
  const AttentionParams p = params_for(s);
  const int n = 512, needle = 200;
  auto q = random_vec((size_t)n * s.n_head * s.hd, 21);
  auto k = random_vec((size_t)n * s.n_kv * s.hd, 22);
  auto v = random_vec((size_t)n * s.n_kv * s.hd, 23);
  const int last = n - 1;
  // Heads 0..2 (kv head 0) ask the same question u; the needle key is 4u.
  const float* u = &q[(size_t)last * s.n_head * s.hd];
  for (int h = 1; h < 3; ++h)
    std::copy(u, u + s.hd, &q[((size_t)last * s.n_head + h) * s.hd]);
  for (int c = 0; c < s.hd; ++c) k[(size_t)needle * s.n_kv * s.hd + c] = 4.f * u[c];
  for (int c = 0; c < s.hd; ++c) v[((size_t)needle * s.n_kv + 0) * s.hd + c] = 100.f;
  auto cache = make_cache(s, {*parse_policy("topk:sparsity=0.9")});
  ThreadPool threads(1);
  const auto out = run_chunks(*cache, s, p, q, k, v, {n - 1, 1}, threads);
  // Heads 0..2 (kv head 0) put nearly all weight on the needle's value.
  for (int c = 0; c < s.hd; ++c) EXPECT_NEAR(out[((size_t)last * s.n_head + 0) * s.hd + c], 100.f, 1.f);
}

TEST(TopkPolicy, PerHeadPlansPassTheChecker) {
  const int page = 16, n_kv = 2, n_head = 4, hd = 8;
  PageSummaries sums(64, n_kv, hd);
  const auto keys = random_vec((size_t)page * n_kv * hd, 31);
  std::vector<int32_t> table;
  for (int32_t L = 0; L < 40; ++L) {
    sums.update(L, 0, page, keys.data(), (int64_t)n_kv * hd);
    table.push_back(63 - L);
    sums.update(63 - L, 0, page, random_vec((size_t)page * n_kv * hd, 100 + L).data(), (int64_t)n_kv * hd);
  }
  const PolicySpec pol = *parse_policy("topk:sparsity=0.7,block=32");
  const int64_t kv_len = 40 * page - 5;
  const auto q = random_vec((size_t)70 * n_head * hd, 32);
  auto planned = plan_topk(pol, table, page, kv_len, kv_len - 70, 70, 32, sums, q.data(), n_head, n_kv);
  ASSERT_TRUE(planned.ok()) << planned.status().to_string();
  const AttentionPlan& plan = *planned;
  ASSERT_TRUE(plan.per_head());
  EXPECT_EQ(plan.n_blocks(), 3);
  EXPECT_TRUE(check_plan(plan, pol, page, kv_len).ok()) << check_plan(plan, pol, page, kv_len).to_string();
  for (int b = 0; b < plan.n_blocks(); ++b)
    for (int h = 0; h < n_kv; ++h) {
      const int64_t n = plan.entry_end(b, h) - plan.entry_begin(b, h);
      EXPECT_LT(n, 40) << "block " << b << " head " << h << " read every page";
      EXPECT_GE(n, 2);
    }
}

}  // namespace stride

namespace stride {

// sparse_prefill: top-k over pooled queries on prompt chunks, every page on decode.
TEST(SparsePrefill, ParsesWithItsDefaultsAndPrints) {
  auto p = parse_policy("sparse_prefill");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->kind, PolicyKind::TopK);
  EXPECT_TRUE(p->decode_dense && p->select_per_block && p->pooled_estimate);
  EXPECT_DOUBLE_EQ(p->mass, 0.95);
  EXPECT_TRUE(p->dense_layers.empty());
  EXPECT_TRUE(p->last_chunk_dense) << "the prompt's last chunk reads every page by default";
  EXPECT_EQ(p->window, 512) << "each prompt block reads the 512 tokens before it";
  auto one_page = parse_policy("sparse_prefill:window=32");  // the definition before 2026-12-07
  ASSERT_TRUE(one_page.ok()) << one_page.status().to_string();
  EXPECT_EQ(one_page->window, 32);
  EXPECT_TRUE(one_page->last_chunk_dense);
  auto every = parse_policy("sparse_prefill:last=topk");
  ASSERT_TRUE(every.ok()) << every.status().to_string();
  EXPECT_FALSE(every->last_chunk_dense);
  auto fixed = parse_policy("sparse_prefill:sparsity=0.8,estimate=bound");
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_DOUBLE_EQ(fixed->mass, 0.0);
  EXPECT_DOUBLE_EQ(fixed->sparsity, 0.8);
  EXPECT_FALSE(fixed->pooled_estimate);
  for (const PolicySpec& spec : {*p, *every, *fixed, *one_page}) {
    auto rt = parse_policy(policy_to_string(spec));
    ASSERT_TRUE(rt.ok()) << policy_to_string(spec);
    EXPECT_EQ(*rt, spec) << policy_to_string(spec);
  }
  EXPECT_FALSE(parse_policy("sparse_prefill:resident=64").ok());  // decode reads every page
  EXPECT_FALSE(parse_policy("topk:decode=sometimes").ok());
  EXPECT_FALSE(parse_policy("topk:estimate=guess").ok());
  // Decode steps and speculative verification read every page; prompt chunks select.
  EXPECT_TRUE(topk_selects(*p, 64, false));
  EXPECT_FALSE(topk_selects(*p, 1, false));
  EXPECT_FALSE(topk_selects(*p, 8, true));
  EXPECT_TRUE(topk_selects(*parse_policy("topk"), 1, false));
}

TEST(SparsePrefill, PromptChunksMatchTheSelectionAndDecodeReadsEveryPage) {
  check_topk("sparse_prefill:sparsity=0.75", 260, {260}, 2);
  check_topk("sparse_prefill:sparsity=0.6,block=32,sinks=20,window=40", 300, {130, 170}, 2);
  check_topk("sparse_prefill:mass=0.8", 260, {100, 160}, 2);
  check_topk("sparse_prefill", 300, {130, 170}, 2);
  // Past the 512-token window: blocks select among the pages before it.
  check_topk("sparse_prefill", 1200, {600, 600}, 2);
  check_topk("sparse_prefill:window=100", 700, {350, 350}, 2);
  // 960-token prompt then 64 decode steps: the decode steps read every page.
  std::vector<int> chunks = {960};
  chunks.resize(65, 1);
  const KvStats st = check_topk("sparse_prefill:sparsity=0.9", 1024, chunks, 2);
  const KvStats pre = check_topk("sparse_prefill:sparsity=0.9", 960, {960}, 2);
  EXPECT_LT(pre.pages_read, pre.pages_present) << "the prompt read a share of its pages";
  EXPECT_EQ(st.pages_read - pre.pages_read, st.pages_present - pre.pages_present) << "decode read them all";
}

// last=dense: the prompt's last chunk (the step that asks for its last
// token's logits) reads every page, so its attention is dense's; earlier
// chunks, scoring steps (logits for every row) and steps without logits select.
TEST(SparsePrefill, LastDenseReadsEveryPageOnThePromptsLastChunk) {
  auto p = parse_policy("sparse_prefill:last=dense");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->last_chunk_dense);
  auto rt = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(rt.ok()) << policy_to_string(*p);
  EXPECT_EQ(*rt, *p);
  EXPECT_FALSE(parse_policy("topk:sparsity=0.9,prefill=dense,last=dense").ok());
  EXPECT_FALSE(parse_policy("sparse_prefill:last=maybe").ok());
  EXPECT_FALSE(topk_selects(*p, 64, false, /*ends_prompt=*/true));
  EXPECT_TRUE(topk_selects(*p, 64, false, /*ends_prompt=*/false));
  EXPECT_TRUE(topk_selects(*parse_policy("sparse_prefill:last=topk"), 64, false, /*ends_prompt=*/true));

  Shape s;
  const int n = 300, first = 200;
  const Inputs in = random_inputs(s, n, 31);
  const AttentionParams params = params_for(s);
  ThreadPool threads(2);
  const size_t kr = (size_t)s.n_kv * s.hd, qr = (size_t)s.n_head * s.hd;
  // Attention of the second chunk's queries, and whether that chunk selected.
  auto second_chunk = [&](const char* policy, bool logits, bool all_logits, bool& selected) {
    auto kv = make_cache(s, {*parse_policy(policy)});
    auto seq = kv->add_sequence();
    std::vector<float> out((size_t)n * qr, 0.f), logit_rows(1);
    for (const int64_t pos : {int64_t{0}, int64_t{first}}) {
      SequenceStep step{*seq, nullptr, pos == 0 ? first : n - first};
      step.all_logits = all_logits;
      step.logits = logits || all_logits ? logit_rows.data() : nullptr;  // the manager never writes them
      auto plan = kv->prepare(std::span<const SequenceStep>(&step, 1));
      EXPECT_TRUE(plan.ok());
      selected = plan->seqs[0].layers[0].needs_selection;
      EXPECT_TRUE(kv->write(*plan, 0, 0, in.k.data() + pos * kr, in.v.data() + pos * kr).ok());
      EXPECT_TRUE(kv->select(*plan, 0, 0, in.q.data() + pos * qr, s.n_head, 0.f, threads).ok());
      EXPECT_TRUE(attention_paged(kv->pool(), plan->seqs[0].layers[0].pages, kv->config().layer_policies[0], params,
                                  in.q.data() + pos * qr, out.data() + pos * qr, threads).ok());
      EXPECT_TRUE(kv->commit(*plan).ok());
    }
    return std::vector<float>(out.begin() + (int64_t)first * qr, out.end());
  };
  bool selected = false;
  // window=32: one page back, so the selecting chunk leaves pages of 300 tokens out.
  const std::vector<float> dense = second_chunk("dense", true, false, selected);
  EXPECT_EQ(max_abs_diff(second_chunk("sparse_prefill:sparsity=0.9,last=dense,window=32", true, false, selected), dense), 0.f);
  EXPECT_FALSE(selected);
  EXPECT_GT(max_abs_diff(second_chunk("sparse_prefill:sparsity=0.9,last=dense,window=32", false, false, selected), dense), 1e-3f);
  EXPECT_TRUE(selected) << "a chunk without logits is not the prompt's last";
  EXPECT_GT(max_abs_diff(second_chunk("sparse_prefill:sparsity=0.9,last=dense,window=32", false, true, selected), dense), 1e-3f);
  EXPECT_TRUE(selected) << "a scoring chunk (logits for every row) selects";
  EXPECT_GT(max_abs_diff(second_chunk("sparse_prefill:sparsity=0.9,last=topk,window=32", true, false, selected), dense), 1e-3f);
  EXPECT_TRUE(selected);
}

// prefill=dense (Quest's setting): prompt chunks read every page, decode
// steps select; estimate=oracle ranks by exact mass and needs it.
TEST(TopkDecodeOnly, ParsesPrintsAndRefusesWhatCannotRun) {
  for (const char* text : {"topk:sparsity=0.9,prefill=dense", "topk:sparsity=0.8,block=64,prefill=dense,estimate=oracle"}) {
    auto p = parse_policy(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    EXPECT_TRUE(p->prefill_dense);
    EXPECT_FALSE(topk_selects(*p, 64, false)) << "a prompt chunk reads every page";
    EXPECT_TRUE(topk_selects(*p, 1, false) && topk_selects(*p, 8, true)) << "decode steps select";
    EXPECT_EQ(*parse_policy(policy_to_string(*p)), *p) << policy_to_string(*p);
  }
  for (const char* bad : {"topk:estimate=oracle", "topk:prefill=dense,decode=dense", "topk:prefill=dense,resident=64",
                          "topk:mass=0.9,prefill=dense,estimate=oracle", "topk:prefill=sometimes", "sparse_prefill:prefill=dense"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

TEST(TopkDecodeOnly, PromptReadsEveryPageAndDecodeMatchesTheSelection) {
  std::vector<int> chunks = {300};
  chunks.resize(33, 1);
  const KvStats st = check_topk("topk:sparsity=0.8,prefill=dense", 332, chunks, 2);
  const KvStats pre = check_topk("topk:sparsity=0.8,prefill=dense", 300, {300}, 2);
  EXPECT_EQ(pre.pages_read, pre.pages_present) << "the prompt read every page";
  EXPECT_LT(st.pages_read - pre.pages_read, st.pages_present - pre.pages_present) << "decode read a share";
  check_topk("topk:sparsity=0.6,block=32,sinks=20,window=40,prefill=dense", 300, split_into(300, {150, 1}), 2);
}

// The oracle reads the pages of highest exact softmax mass (topk_oracle.h's
// plain double loops over the stored f16 keys), on one and several threads.
TEST(TopkDecodeOnly, OracleMatchesTheExactMassSelection) {
  check_topk("topk:sparsity=0.8,prefill=dense,estimate=oracle", 400, split_into(400, {200, 1}), 2);
  check_topk("topk:sparsity=0.9,block=32,prefill=dense,estimate=oracle", 300, split_into(300, {100, 1}), 1);
  check_topk("topk:sparsity=0.5,prefill=dense,estimate=oracle", 653, {650, 1, 1, 1}, 3);
}

}  // namespace stride

// Rolling back a verification step's rejected tail: after a step of
// [t, d1 .. dk] that keeps only [t, d1 .. da], the KV state must be the one
// a run that never saw d(a+1) .. dk has. Checked through the next step's
// logits, byte for byte against one uncached run of the kept tokens and the
// next ones in a single chunk (decode equals prefill: docs/architecture.md),
// for every policy kind, around page and window boundaries, with f16 and
// int8 KV; and KvManager::truncate (the draft model's cut) the same way.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/step_runner.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using namespace testing_util;

struct RollbackCase {
  std::string label;
  std::string model;
  std::string policy;
  std::vector<std::string> layers;  // per-layer overrides (mixed policies)
  KvStorage storage = KvStorage::F16;
};

void PrintTo(const RollbackCase& c, std::ostream* os) { *os << c.label; }

std::unique_ptr<Engine> engine_for(const RollbackCase& c, bool prefix_cache) {
  EngineOptions o = exact_engine_options(c.model, c.policy, 4, 4096);
  o.threads = 2;
  o.kv_storage = c.storage;
  o.prefix_cache = prefix_cache;
  o.layer_policies = c.layers;
  return create_engine(o);
}

class SpeculativeRollback : public ::testing::TestWithParam<RollbackCase> {};

// prompt (p tokens) -> step [t, drafts] keeping `kept` of its tokens -> the
// next `follow` tokens one step each; their logits against one run of
// prompt + kept + follow.
TEST_P(SpeculativeRollback, NextStepsEqualARunWithoutTheRejectedTail) {
  const RollbackCase& c = GetParam();
  auto e = engine_for(c, true);  // the kept pages enter the prefix cache as they fill
  ASSERT_TRUE(e);
  const size_t V = (size_t)e->config().n_vocab;
  // Prompt lengths and cuts around pages (4) and windows (8): the tail may
  // fill whole pages, and the windows would move past the kept keys.
  for (const int prompt_len : {7, 8, 13, 22}) {
    for (const int kept : {1, 2, 4, 6}) {
      SCOPED_TRACE("prompt " + std::to_string(prompt_len) + ", kept " + std::to_string(kept));
      const int step_len = 9;  // the last token and 8 drafts
      const std::vector<int32_t> prompt = random_ids(*e, prompt_len, 1);
      const std::vector<int32_t> step = random_ids(*e, step_len, 2);
      const std::vector<int32_t> follow = random_ids(*e, 5, 3);

      // The reference: prompt + step[0, kept) + follow in one uncached chunk.
      std::vector<int32_t> whole = prompt;
      whole.insert(whole.end(), step.begin(), step.begin() + kept);
      whole.insert(whole.end(), follow.begin(), follow.end());
      auto ref_seq = e->kv().add_sequence();
      ASSERT_TRUE(ref_seq.ok());
      const std::vector<float> ref = run_tokens(*e, *ref_seq, whole, 0, (int)whole.size(), true);
      e->kv().remove_sequence(*ref_seq);

      auto seq = e->kv().add_sequence();
      ASSERT_TRUE(seq.ok());
      run_tokens(*e, *seq, prompt, 0, prompt_len, false);
      std::vector<float> rows((size_t)step_len * V);
      SequenceStep s;
      s.seq = *seq;
      s.tokens = step.data();
      s.n = step_len;
      s.all_logits = true;
      s.logits = rows.data();
      s.may_truncate = true;
      ASSERT_TRUE(run_step(e->model(), e->kv(), &s, 1, e->pool(), nullptr, [&](std::span<int> keep) {
                    keep[0] = kept;
                  }).ok());
      EXPECT_EQ(e->kv().length(*seq), prompt_len + kept);
      // The kept rows are what the reference computed at those positions.
      EXPECT_EQ(0, std::memcmp(rows.data(), ref.data() + (size_t)prompt_len * V, (size_t)kept * V * sizeof(float)));
      for (size_t j = 0; j < follow.size(); ++j) {
        const std::vector<float> got = run_tokens(*e, *seq, follow, (int)j, (int)j + 1, true);
        const size_t at = (size_t)(prompt_len + kept + (int)j) * V;
        EXPECT_EQ(0, std::memcmp(got.data(), ref.data() + at, V * sizeof(float))) << "follow token " << j;
      }
      e->kv().remove_sequence(*seq);
    }
  }
}

// KvManager::truncate after committed steps (a draft model's rejected
// drafts): exact where it succeeds; where a window released a page the cut
// sequence needs, it refuses and changes nothing.
TEST_P(SpeculativeRollback, TruncateIsExactOrRefuses) {
  const RollbackCase& c = GetParam();
  auto e = engine_for(c, false);  // as a draft model's KV
  ASSERT_TRUE(e);
  const size_t V = (size_t)e->config().n_vocab;
  const bool must_cut = c.label.find("dense") != std::string::npos;  // nothing is ever released
  const std::vector<int32_t> ids = random_ids(*e, 30, 4);
  for (const int cut_back : {1, 3, 5}) {
    SCOPED_TRACE("cut back " + std::to_string(cut_back));
    const int len = 17;  // fed one token a step, then cut to len - cut_back
    const int cut = len - cut_back;
    auto seq = e->kv().add_sequence();
    ASSERT_TRUE(seq.ok());
    for (int i = 0; i < len; ++i) run_tokens(*e, *seq, ids, i, i + 1, false);
    const Status st = e->kv().truncate(*seq, cut);
    EXPECT_TRUE(st.ok() || !must_cut) << st.to_string();
    if (!st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
      EXPECT_EQ(e->kv().length(*seq), len);
      e->kv().remove_sequence(*seq);
      continue;
    }
    ASSERT_EQ(e->kv().length(*seq), cut);
    std::vector<int32_t> whole(ids.begin(), ids.begin() + cut);
    const std::vector<int32_t> follow = random_ids(*e, 3, 5);
    whole.insert(whole.end(), follow.begin(), follow.end());
    for (size_t j = 0; j < follow.size(); ++j) {
      const std::vector<float> got = run_tokens(*e, *seq, follow, (int)j, (int)j + 1, true);
      auto ref_seq = e->kv().add_sequence();
      ASSERT_TRUE(ref_seq.ok());
      const std::vector<float> ref = run_tokens(*e, *ref_seq, whole, 0, cut + (int)j + 1, true);
      e->kv().remove_sequence(*ref_seq);
      EXPECT_EQ(0, std::memcmp(got.data(), ref.data() + (size_t)(cut + (int)j) * V, V * sizeof(float)));
    }
    e->kv().remove_sequence(*seq);
  }
}

std::vector<RollbackCase> rollback_cases() {
  const std::vector<std::pair<std::string, std::string>> policies = {
      {"dense", "dense"},
      {"window", "window:size=8"},
      {"rswa_abs", "rswa:sinks=2,window=8,pos=abs"},
      {"rswa_rel", "rswa:sinks=2,window=8,pos=rel"},
      {"strided", "strided:window=8,stride=3,block=4"},
      {"topk", "topk:sparsity=0.5,block=4,sinks=4,window=8"},
      {"topk_nowindow", "topk:sparsity=0.5,block=4"},
  };
  std::vector<RollbackCase> out;
  for (const auto& [label, policy] : policies) {
    out.push_back({"llama_" + label, tiny("llama"), policy, {}});
    out.push_back({"llama_" + label + "_int8", tiny("llama"), policy, {}, KvStorage::Int8});
  }
  out.push_back({"llama_mixed", tiny("llama"), "dense", {"0-0=rswa:sinks=2,window=8", "1-1=topk:sparsity=0.5,block=4"}});
  out.push_back({"gemma3_native", tiny("gemma3"), "dense", {}});
  out.push_back({"mistral_native", tiny("mistral"), "dense", {}});
  out.push_back({"qwen2_topk", tiny("qwen2"), "topk:sparsity=0.5,block=4,sinks=4,window=8", {}});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Policies, SpeculativeRollback, ::testing::ValuesIn(rollback_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace stride

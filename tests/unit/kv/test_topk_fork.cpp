// Forking a sequence of a top-k hot set (parallel sampling's branches):
// the pages the parent moved to the tier are copied into slots of the
// child's own. Checked against the same policy without a resident limit, bit
// for bit: each branch continues exactly as an unforked sequence would, and
// pool pages and tier slots go back to zero once both end. A tier with no
// room for the copies refuses the fork and leaves everything as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cache_test_util.h"
#include "kv/kv_manager.h"
#include "topk_test_util.h"

namespace stride {

using namespace testing_util;

namespace {

constexpr char kUnlimited[] = "topk:sparsity=0.8";
constexpr char kHot[] = "topk:sparsity=0.8,resident=6";
constexpr int kForkAt = 300;  // tokens the parent holds when it forks: most of its pages in the tier

// Attention outputs of rows [from, kTok) per layer: [rows, n_head, hd].
using Rows = std::vector<float>[kLayers];

// Feeds tokens [from, to) one per step (after a first chunk of `first` tokens
// when from is 0) and keeps each layer's outputs of rows [kForkAt, kTok).
void feed(StepDriver& steps, KvManager::SeqId seq, int from, int to, int first, Rows& out) {
  const Data& d = data();
  const std::vector<int32_t> ids = token_ids();
  const size_t kr = (size_t)kS.n_kv * kS.hd, qr = (size_t)kS.n_head * kS.hd;
  ThreadPool threads(2);
  std::vector<float> row;
  for (int pos = from; pos < to;) {
    const int c = pos == 0 ? first : 1;
    ASSERT_TRUE(steps.reserve(seq, c).ok());
    for (int l = 0; l < kLayers; ++l) {
      row.assign((size_t)c * qr, 0.f);
      steps.write(l, seq, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr, c);
      steps.attend(l, seq, d.q[l].data() + pos * qr, c, params_for(kS), row.data(), threads);
      if (pos >= kForkAt) out[l].insert(out[l].end(), row.begin(), row.end());
    }
    steps.commit(seq, c, ids.data() + pos);
    pos += c;
  }
}

// A hot-set manager whose tier has `tier_slots` slots, and a parent sequence
// fed kForkAt tokens: most of its pages are in the tier.
struct Parent {
  std::unique_ptr<KvManager> cache;
  std::unique_ptr<StepDriver> steps;
  KvManager::SeqId seq = -1;

  explicit Parent(int64_t tier_slots) : cache(make_topk_cache(kHot, 64, {tier_slots, ""})) {
    if (!cache) return;
    steps = std::make_unique<StepDriver>(*cache);
    auto added = steps->add_sequence();
    EXPECT_TRUE(added.ok());
    seq = *added;
    Rows unused;
    feed(*steps, seq, 0, kForkAt, 100, unused);
  }
};

bool same(const Rows& a, const Rows& b) {
  for (int l = 0; l < kLayers; ++l)
    if (a[l].size() != b[l].size() || std::memcmp(a[l].data(), b[l].data(), a[l].size() * sizeof(float)) != 0)
      return false;
  return true;
}

TEST(TopkHotSetFork, BranchesContinueAsTheUnlimitedPolicyWithSlotsOfTheirOwn) {
  Rows want;
  {
    auto plain = make_topk_cache(kUnlimited, 64, {});
    ASSERT_TRUE(plain);
    StepDriver steps(*plain);
    auto seq = steps.add_sequence();
    ASSERT_TRUE(seq.ok());
    feed(steps, *seq, 0, kTok, 100, want);
    ASSERT_EQ(want[0].size(), (size_t)(kTok - kForkAt) * kS.n_head * kS.hd);
  }
  Parent p(128);
  ASSERT_TRUE(p.cache);
  StepDriver& steps = *p.steps;
  const KvManager::SeqId parent = p.seq;
  const KvStats before = steps.stats();
  ASSERT_GT(before.topk_pages_offloaded, 0);
  ASSERT_LT(steps.pages_held(parent, 0), kForkAt / kS.page) << "the parent has pages in the tier";

  auto child = p.cache->fork_sequence(parent);
  ASSERT_TRUE(child.ok()) << child.status().to_string();
  const KvStats forked = steps.stats();
  EXPECT_EQ(forked.forks, 1);
  EXPECT_GT(forked.tier_slots_owned, before.tier_slots_owned) << "the child's copies of the cold pages";
  EXPECT_EQ(steps.length(*child), kForkAt);

  Rows got_parent, got_child;
  feed(steps, *child, kForkAt, kTok, 0, got_child);  // the child first: the parent's pages must not depend on it
  feed(steps, parent, kForkAt, kTok, 0, got_parent);
  EXPECT_TRUE(same(got_child, want)) << "the forked branch's attention differs from an unforked run";
  EXPECT_TRUE(same(got_parent, want)) << "the parent's attention changed after the fork";
  EXPECT_EQ(steps.stats().topk_restore_failed, 0);

  steps.remove_sequence(parent);
  steps.remove_sequence(*child);
  const KvStats end = steps.stats();
  EXPECT_EQ(end.pages_used, 0);
  EXPECT_EQ(end.tier_slots_owned, 0) << "every owned slot, the child's copies too, is freed";
}

TEST(TopkHotSetFork, ATierWithoutRoomRefusesWithNothingChanged) {
  // Five slots: the parent's cold pages fill them, so the copies find none.
  Parent p(5);
  ASSERT_TRUE(p.cache);
  StepDriver& steps = *p.steps;
  const KvStats before = steps.stats();
  ASSERT_EQ(before.tier_slots_owned, 5);
  auto child = p.cache->fork_sequence(p.seq);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kResourceExhausted) << child.status().to_string();
  const KvStats after = steps.stats();
  EXPECT_EQ(after.pages_used, before.pages_used);
  EXPECT_EQ(after.tier_slots_owned, before.tier_slots_owned);
  EXPECT_EQ(after.tier_slots_used, before.tier_slots_used);
  EXPECT_EQ(after.forks, 0);
  // The parent goes on.
  Rows rest;
  feed(steps, p.seq, kForkAt, kTok, 0, rest);
  steps.remove_sequence(p.seq);
  EXPECT_EQ(steps.stats().pages_used, 0);
  EXPECT_EQ(steps.stats().tier_slots_owned, 0);
}

}  // namespace
}  // namespace stride

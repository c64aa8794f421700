// KvManager::truncate with the top-k hot set (topk:...,resident=N with an
// offload tier) and the prefix cache off. A page that moved to the tier and
// came back keeps its owned slot while it is in the pool; when truncate cuts
// that page off, the slot must go with it:
//   * the tier holds no slot for a page the sequence no longer has;
//   * a page written again at that logical index is saved afresh when it
//     moves out, so bringing it back returns the new keys and values (the
//     attention output equals the same steps without a resident limit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kS;  // 6 query heads, 2 kv heads, head_dim 64, 16-token pages
constexpr int kLayers = 2;
constexpr int kFirst = 320;  // 20 pages, then cut back
constexpr int kCut = 160;    // 10 pages (top-k cuts on page boundaries)
constexpr int kTok = 400;    // 25 pages after growing back
constexpr char kUnlimited[] = "topk:sparsity=0.8";
constexpr char kHot[] = "topk:sparsity=0.8,resident=6";

// Two sets of q/k/v over the same positions: the first fills the sequence
// before the cut, the second grows it back past the cut.
struct Data {
  std::vector<float> q[2][kLayers], k[2][kLayers], v[2][kLayers];
  Data() {
    for (int s = 0; s < 2; ++s)
      for (int l = 0; l < kLayers; ++l) {
        q[s][l] = random_vec((size_t)kTok * kS.n_head * kS.hd, 141 + 10 * s + l);
        k[s][l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 151 + 10 * s + l);
        v[s][l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 161 + 10 * s + l);
      }
  }
};
const Data& data() {
  static const Data d;
  return d;
}

std::unique_ptr<KvManager> make(const char* policy, int64_t tier_slots) {
  KvManagerConfig cfg;
  cfg.n_layer = kLayers;
  cfg.n_kv_heads = kS.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kS.hd;
  cfg.page_size = kS.page;
  cfg.layer_policies.assign(kLayers, *parse_policy(policy));
  cfg.cache_salt = "topk-truncate-test";
  cfg.prefix_cache = false;
  const KvPoolShape shape{kS.n_kv, kS.hd, kS.hd, kS.page, KvStorage::F16};
  cfg.budget_bytes = (int64_t)64 * shape.bytes_per_page();
  auto one = KvPool::create(shape, 1);
  EXPECT_TRUE(one.ok());
  cfg.offload_bytes = tier_slots * ((*one)->page_image_bytes() + PageSummaries::page_bytes(kS.n_kv, kS.hd));
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

// Feeds positions [from, to) of data set `set` in `chunk`-token steps; out: [kTok, n_head, hd] per layer.
void feed(StepDriver& kv, KvManager::SeqId seq, int set, int64_t from, int64_t to, int chunk,
          std::vector<float> (&out)[kLayers]) {
  const Data& d = data();
  ThreadPool threads(2);
  const AttentionParams p = params_for(kS);
  const size_t kr = (size_t)kS.n_kv * kS.hd, qr = (size_t)kS.n_head * kS.hd;
  for (int64_t pos = from; pos < to;) {
    const int c = (int)std::min<int64_t>(chunk, to - pos);
    const Status st = kv.reserve(seq, c);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (int l = 0; l < kLayers; ++l) {
      kv.write(l, seq, d.k[set][l].data() + pos * kr, d.v[set][l].data() + pos * kr, c);
      kv.attend(l, seq, d.q[set][l].data() + pos * qr, c, p, out[l].data() + pos * qr, threads);
    }
    kv.commit(seq, c);
    pos += c;
  }
}

struct CutRun {
  std::vector<float> out[kLayers];  // [kTok, n_head, hd]: rows past kCut are the regrown ones
  KvStats before_cut, after_cut, after_regrow, after_cut_to_zero;
};

// Prefill 96, decode to kFirst, truncate to kCut, grow back with the second
// data set (a 48-token chunk, then decode) to kTok, then truncate to 0.
CutRun run(KvManager& manager) {
  StepDriver kv(manager);
  CutRun r;
  for (auto& o : r.out) o.assign((size_t)kTok * kS.n_head * kS.hd, NAN);
  auto seq = kv.add_sequence();
  EXPECT_TRUE(seq.ok());
  feed(kv, *seq, 0, 0, 96, 96, r.out);
  feed(kv, *seq, 0, 96, kFirst, 1, r.out);
  r.before_cut = kv.stats();
  const Status cut = manager.truncate(*seq, kCut);
  EXPECT_TRUE(cut.ok()) << cut.to_string();
  r.after_cut = kv.stats();
  feed(kv, *seq, 1, kCut, kCut + 48, 48, r.out);
  feed(kv, *seq, 1, kCut + 48, kTok, 1, r.out);
  r.after_regrow = kv.stats();
  const Status zero = manager.truncate(*seq, 0);
  EXPECT_TRUE(zero.ok()) << zero.to_string();
  r.after_cut_to_zero = kv.stats();
  kv.remove_sequence(*seq);
  return r;
}

TEST(TopkHotSetTruncate, CutPagesLeaveTheTierAndRegrownPagesComeBackNew) {
  auto plain = make(kUnlimited, 0);
  auto hot = make(kHot, 64);
  ASSERT_TRUE(plain && hot);
  const CutRun want = run(*plain);
  const CutRun got = run(*hot);

  // The run exercises the hot set on both sides of the cut.
  EXPECT_GT(got.before_cut.topk_pages_restored, 0);
  EXPECT_GT(got.after_regrow.topk_pages_restored, got.after_cut.topk_pages_restored);
  EXPECT_EQ(got.after_regrow.topk_restore_failed, 0);
  EXPECT_EQ(got.after_regrow.topk_offload_refused, 0);

  // Slots: the cut frees those of the pages past it; a cut to nothing frees all.
  EXPECT_LT(got.after_cut.tier_slots_owned, got.before_cut.tier_slots_owned);
  EXPECT_LE(got.after_cut.tier_slots_owned, 2 * (kCut / kS.page)) << "at most one slot per kept page and layer";
  EXPECT_EQ(got.after_cut_to_zero.tier_slots_owned, 0) << "owned slots of cut pages were kept";
  EXPECT_EQ(got.after_cut_to_zero.tier_slots_used, 0);
  EXPECT_EQ(got.after_cut_to_zero.pages_used, 0);

  // Every row, before and after the cut, equals the run without a resident limit.
  for (int l = 0; l < kLayers; ++l) {
    const size_t qr = (size_t)kS.n_head * kS.hd;
    EXPECT_EQ(std::memcmp(got.out[l].data(), want.out[l].data(), (size_t)kCut * qr * sizeof(float)), 0)
        << "layer " << l << " before the cut";
    size_t first_bad = kTok;
    for (size_t i = kCut; i < (size_t)kTok && first_bad == (size_t)kTok; ++i)
      if (std::memcmp(got.out[l].data() + i * qr, want.out[l].data() + i * qr, qr * sizeof(float)) != 0)
        first_bad = i;
    EXPECT_EQ(first_bad, (size_t)kTok) << "layer " << l << ": regrown rows differ from position " << first_bad
                                       << " (a page came back with the keys it had before the cut)";
  }
  EXPECT_EQ(hot->stats().tier_slots_owned, 0);
  EXPECT_EQ(hot->stats().pages_used, 0);
}

}  // namespace
}  // namespace stride

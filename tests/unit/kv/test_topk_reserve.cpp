// prepare() reserves every pool page a top-k hot-set step can take: a step
// is refused at prepare (ResourceExhausted, nothing changes) or runs to the
// end; select() never fails for want of a page. Swept over pool sizes, tiers
// that run full (moves refused), prefill chunks whose picks exceed
// resident=N, and a second sequence on the first one's prefix pages (moving
// a shared page frees nothing). Where a run completes, its attention output
// equals the same policy without a resident limit, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
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
constexpr int kTok = 320;  // 20 pages
constexpr char kHot[] = "topk:sparsity=0.75,resident=4";
constexpr char kUnlimited[] = "topk:sparsity=0.75";

struct Data {
  std::vector<float> q[kLayers], k[kLayers], v[kLayers];
  std::vector<int32_t> ids;
  Data() {
    for (int l = 0; l < kLayers; ++l) {
      q[l] = random_vec((size_t)kTok * kS.n_head * kS.hd, 71 + l);
      k[l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 81 + l);
      v[l] = random_vec((size_t)kTok * kS.n_kv * kS.hd, 91 + l);
    }
    for (int i = 0; i < kTok; ++i) ids.push_back((i * 11 + 5) % 397);
  }
};
const Data& data() {
  static const Data d;
  return d;
}

std::unique_ptr<KvManager> make(const char* policy, int32_t n_pages, int64_t tier_slots) {
  KvManagerConfig cfg;
  cfg.n_layer = kLayers;
  cfg.n_kv_heads = kS.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = kS.hd;
  cfg.page_size = kS.page;
  cfg.layer_policies.assign(kLayers, *parse_policy(policy));
  cfg.cache_salt = "topk-reserve-test";
  const KvPoolShape shape{kS.n_kv, kS.hd, kS.hd, kS.page, KvStorage::F16};
  cfg.budget_bytes = (int64_t)n_pages * shape.bytes_per_page();
  auto one = KvPool::create(shape, 1);
  EXPECT_TRUE(one.ok());
  cfg.offload_bytes = tier_slots * ((*one)->page_image_bytes() + PageSummaries::page_bytes(kS.n_kv, kS.hd));
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

struct Outcome {
  bool completed = false;
  std::vector<float> out[kLayers];  // [kTok, n_head, hd] of the sequence fed to the end
};

// Feeds tokens [from, kTok) of seq in `chunks`; false at the first refused
// prepare (after checking that it changed nothing).
bool feed(KvManager& kv, KvManager::SeqId seq, int64_t from, const std::vector<int>& chunks, Outcome& o) {
  const Data& d = data();
  ThreadPool threads(2);
  const AttentionParams p = params_for(kS);
  const size_t kr = (size_t)kS.n_kv * kS.hd, qr = (size_t)kS.n_head * kS.hd;
  int64_t pos = from;
  for (const int want : chunks) {
    const int c = (int)std::min<int64_t>(want, kTok - pos);
    if (c <= 0) break;
    const SequenceStep r{seq, d.ids.data() + pos, c};
    const int64_t used = kv.stats().pages_used;
    auto plan = kv.prepare(std::span<const SequenceStep>(&r, 1));
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted) << plan.status().to_string();
      EXPECT_EQ(kv.stats().pages_used, used) << "a refused prepare changed the pool";
      return false;
    }
    for (int l = 0; l < kLayers; ++l) {
      EXPECT_TRUE(kv.write(*plan, 0, l, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr).ok());
      const Status sel = kv.select(*plan, 0, l, d.q[l].data() + pos * qr, p.n_head, 0.f, threads);
      EXPECT_TRUE(sel.ok()) << "select failed after prepare succeeded: " << sel.to_string();
      if (!sel.ok()) return false;
      const Status ran = attention_paged(kv.pool(), plan->seqs[0].layers[(size_t)l].pages,
                                         kv.config().layer_policies[(size_t)l], p, d.q[l].data() + pos * qr,
                                         o.out[l].data() + pos * qr, threads);
      EXPECT_TRUE(ran.ok()) << ran.to_string();
    }
    EXPECT_TRUE(kv.commit(*plan).ok());
    pos += c;
  }
  return pos == kTok;
}

// Sequence A to kTok. With `shared`, B starts on A's first chunk once A has
// committed it (so both hold those pages, and B's moves of them free
// nothing), A runs to the end, then B; the outcome is B's.
Outcome run(KvManager& kv, const std::vector<int>& chunks, bool shared) {
  Outcome a_out, o;
  for (auto* x : {&a_out, &o})
    for (auto& out : x->out) out.assign((size_t)kTok * kS.n_head * kS.hd, 0.f);
  auto a = kv.add_sequence();
  EXPECT_TRUE(a.ok());
  if (!shared) {
    o.completed = feed(kv, *a, 0, chunks, o);
    kv.remove_sequence(*a);
    return o;
  }
  const std::vector<int> first(chunks.begin(), chunks.begin() + 1), rest(chunks.begin() + 1, chunks.end());
  if (feed(kv, *a, 0, first, a_out) || kv.length(*a) == chunks[0]) {
    auto b = kv.add_sequence_with_prefix(std::span<const int32_t>(data().ids));
    EXPECT_TRUE(b.ok());
    EXPECT_EQ(b->reused_tokens, chunks[0]) << "B shares A's first chunk";
    o.out[0].assign(a_out.out[0].begin(), a_out.out[0].end());  // B's reused positions are A's
    o.out[1].assign(a_out.out[1].begin(), a_out.out[1].end());
    o.completed = feed(kv, *a, chunks[0], rest, a_out) && feed(kv, b->seq, b->reused_tokens, rest, o);
    kv.remove_sequence(b->seq);
  }
  kv.remove_sequence(*a);
  return o;
}

bool same_bits(const Outcome& a, const Outcome& b) {
  for (int l = 0; l < kLayers; ++l)
    if (std::memcmp(a.out[l].data(), b.out[l].data(), a.out[l].size() * sizeof(float)) != 0) return false;
  return true;
}

TEST(TopkHotSetReserve, StepsFailAtPrepareOrNotAtAll) {
  // Two prefill chunks (the second reads pages already in the tier, with
  // picks summed over 48 queries far beyond N), then decode.
  std::vector<int> chunks{96, 48};
  chunks.resize((size_t)(kTok - 144 + 2), 1);
  int completed = 0, refused = 0;
  for (const bool shared : {false, true}) {
    auto ref = make(kUnlimited, 128, 0);
    const Outcome want = run(*ref, chunks, shared);
    ASSERT_TRUE(want.completed);
    for (const int64_t slots : {3, 10, 64})
      for (const int32_t pages : {10, 14, 18, 24, 32, 48, 96}) {
        SCOPED_TRACE("shared=" + std::to_string(shared) + " tier slots=" + std::to_string(slots) +
                     " pool pages=" + std::to_string(pages));
        auto kv = make(kHot, pages, slots);
        ASSERT_TRUE(kv);
        const Outcome got = run(*kv, chunks, shared);
        EXPECT_EQ(kv->stats().topk_restore_failed, 0);
        EXPECT_EQ(kv->stats().pages_used, 0) << "every page back after remove_sequence";
        if (got.completed) {
          ++completed;
          EXPECT_TRUE(same_bits(got, want));
        } else {
          ++refused;
        }
      }
  }
  EXPECT_GT(completed, 0);
  EXPECT_GT(refused, 0) << "the sweep should reach pools too small to serve";
}

}  // namespace
}  // namespace stride

// KvManager::fork_sequence against plain arrays: after a fork both sequences
// read exactly the prompt's keys and values (checked slot by slot and through
// attention against the scalar reference over the plain rows), full pages are
// shared, the open page is copied, and what one branch writes afterwards
// never changes what the other reads.
#include <gtest/gtest.h>

#include <vector>

#include "attention/attention_reference.h"
#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/kv_manager.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr int kLayers = 2;
const size_t kRow = (size_t)kShape.n_kv * kShape.hd;

// Plain rows [n, n_kv, hd] of one sequence, the reference of what it holds.
struct Rows {
  std::vector<float> k, v;
  void append(const std::vector<float>& nk, const std::vector<float>& nv) {
    k.insert(k.end(), nk.begin(), nk.end());
    v.insert(v.end(), nv.begin(), nv.end());
  }
  int64_t n() const { return (int64_t)(k.size() / kRow); }
};

// Writes rows (the same on every layer) as one step.
void feed(StepDriver& d, KvManager::SeqId seq, const std::vector<float>& k, const std::vector<float>& v) {
  const int n = (int)(k.size() / kRow);
  const Status st = d.reserve(seq, n);
  ASSERT_TRUE(st.ok()) << st.to_string();
  for (int l = 0; l < kLayers; ++l) d.write(l, seq, k.data(), v.data(), n);
  d.commit(seq, n);
}

// Every slot the sequence holds equals the reference rows, on every layer.
void expect_holds(const KvManager& kv, KvManager::SeqId seq, const Rows& want) {
  ASSERT_EQ(kv.length(seq), want.n());
  const int ps = kShape.page, hd = kShape.hd;
  for (int l = 0; l < kLayers; ++l) {
    const std::vector<int32_t>& table = *kv.sequences().page_table(seq, l);
    for (int64_t pos = 0; pos < want.n(); ++pos) {
      const int32_t page = table[(size_t)(pos / ps)];
      ASSERT_GE(page, 0);
      EXPECT_EQ(kv.pool().positions(page)[pos % ps], pos);
      for (int h = 0; h < kShape.n_kv; ++h)
        for (int d = 0; d < hd; ++d) {
          const size_t at = (size_t)pos * kRow + (size_t)h * hd + d;
          ASSERT_EQ(kv.pool().k32(page, h)[(pos % ps) * hd + d], want.k[at]) << "layer " << l << " pos " << pos;
          ASSERT_EQ(kv.pool().v32(page, h)[(pos % ps) * hd + d], want.v[at]) << "layer " << l << " pos " << pos;
        }
    }
  }
}

// One more token through the paged kernel equals the scalar reference over
// the plain rows plus that token (appended to rows).
void expect_attends(StepDriver& d, KvManager::SeqId seq, Rows& rows, uint32_t seed) {
  const AttentionParams p = params_for(kShape);
  const std::vector<float> q = random_vec((size_t)kShape.n_head * kShape.hd, seed);
  const std::vector<float> k = random_vec(kRow, seed + 1), v = random_vec(kRow, seed + 2);
  const int64_t pos = rows.n();
  rows.append(k, v);
  std::vector<float> got(q.size()), want(q.size());
  ThreadPool threads(2);
  ASSERT_TRUE(d.reserve(seq, 1).ok());
  for (int l = 0; l < kLayers; ++l) d.write(l, seq, k.data(), v.data(), 1);
  d.attend(0, seq, q.data(), 1, p, got.data(), threads);
  d.commit(seq, 1);
  attention_reference(*parse_policy("dense"), p, kShape.n_kv, kShape.hd, kShape.hd, q.data(), 1, pos,
                      rows.k.data(), rows.v.data(), rows.n(), want.data());
  EXPECT_LT(max_abs_diff(got, want), 1e-4f);
}

TEST(KvFork, SharesFullPagesCopiesTheOpenPageAndKeepsBranchesApart) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 64);
  StepDriver d(*kv);
  const KvManager::SeqId parent = *kv->add_sequence();
  Rows prompt;
  prompt.append(random_vec(40 * kRow, 1), random_vec(40 * kRow, 2));  // two full pages and 8 slots
  feed(d, parent, prompt.k, prompt.v);
  const int64_t used_before = kv->stats().pages_used;

  auto child = kv->fork_sequence(parent);
  ASSERT_TRUE(child.ok()) << child.status().to_string();
  EXPECT_EQ(kv->stats().pages_used, used_before + kLayers);  // one copy of the open page per layer
  for (int l = 0; l < kLayers; ++l) {
    const auto& a = *kv->sequences().page_table(parent, l);
    const auto& b = *kv->sequences().page_table(*child, l);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
    EXPECT_NE(a[2], b[2]);
  }
  expect_holds(*kv, parent, prompt);
  expect_holds(*kv, *child, prompt);

  // Each branch writes its own tokens into the open page and past it.
  Rows parent_rows = prompt, child_rows = prompt;
  const std::vector<float> pk = random_vec(30 * kRow, 3), pv = random_vec(30 * kRow, 4);
  const std::vector<float> ck = random_vec(5 * kRow, 5), cv = random_vec(5 * kRow, 6);
  feed(d, parent, pk, pv);
  parent_rows.append(pk, pv);
  expect_holds(*kv, *child, child_rows);  // the parent's writes left the child alone
  feed(d, *child, ck, cv);
  child_rows.append(ck, cv);
  expect_holds(*kv, parent, parent_rows);
  expect_holds(*kv, *child, child_rows);
  expect_attends(d, parent, parent_rows, 10);
  expect_attends(d, *child, child_rows, 20);

  // The shared pages outlive the parent: the child still reads its prompt.
  d.remove_sequence(parent);
  expect_holds(*kv, *child, child_rows);
  expect_attends(d, *child, child_rows, 30);
  d.remove_sequence(*child);
  EXPECT_EQ(kv->stats().pages_used, 0);
}

TEST(KvFork, AtAPageBoundaryEveryPageIsShared) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 64);
  StepDriver d(*kv);
  const KvManager::SeqId parent = *kv->add_sequence();
  Rows prompt;
  prompt.append(random_vec(32 * kRow, 7), random_vec(32 * kRow, 8));
  feed(d, parent, prompt.k, prompt.v);
  const int64_t used = kv->stats().pages_used;
  std::vector<KvManager::SeqId> branches;
  for (int i = 0; i < 3; ++i) {
    auto b = kv->fork_sequence(parent);
    ASSERT_TRUE(b.ok());
    branches.push_back(*b);
  }
  EXPECT_EQ(kv->stats().pages_used, used);
  for (KvManager::SeqId b : branches) expect_holds(*kv, b, prompt);
  for (KvManager::SeqId b : branches) {
    Rows own = prompt;
    expect_attends(d, b, own, 40 + (uint32_t)b);
  }
  expect_holds(*kv, parent, prompt);
}

TEST(KvFork, AFullPoolRefusesWithNothingChanged) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 2 * kLayers);  // exactly the parent's pages
  StepDriver d(*kv);
  const KvManager::SeqId parent = *kv->add_sequence();
  Rows prompt;
  prompt.append(random_vec(20 * kRow, 9), random_vec(20 * kRow, 10));
  feed(d, parent, prompt.k, prompt.v);
  const int64_t used = kv->stats().pages_used;
  auto child = kv->fork_sequence(parent);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(kv->stats().pages_used, used);
  expect_holds(*kv, parent, prompt);
  EXPECT_FALSE(kv->fork_sequence(12345).ok());
}

}  // namespace
}  // namespace stride

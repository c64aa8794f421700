// Prefix-cache bookkeeping: the chained page hash, the index with its LRU of
// unreferenced pages, and PageManager's accounting of used / cached / free.
#include "kv/prefix_index.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "kv/page_manager.h"

namespace stride {
namespace {

TEST(PrefixHash, ChainDependsOnEveryEarlierTokenAndTheSalt) {
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> b = a;
  b[1] = 99;  // differs in the first page only
  const uint64_t salt = prefix_salt("model-v1|dense");
  const uint64_t a0 = chain_page_hash(kPrefixChainRoot, a.data(), 4, salt);
  const uint64_t a1 = chain_page_hash(a0, a.data() + 4, 4, salt);
  const uint64_t b0 = chain_page_hash(kPrefixChainRoot, b.data(), 4, salt);
  const uint64_t b1 = chain_page_hash(b0, b.data() + 4, 4, salt);
  EXPECT_EQ(a0, chain_page_hash(kPrefixChainRoot, a.data(), 4, salt)) << "deterministic";
  EXPECT_NE(a0, b0);
  EXPECT_NE(a1, b1) << "same second page, different first page: different chain";
  EXPECT_NE(a0, chain_page_hash(kPrefixChainRoot, a.data(), 4, prefix_salt("model-v2|dense")));
  EXPECT_NE(prefix_salt("rswa:sinks=4,window=64"), prefix_salt("rswa:sinks=4,window=65"));
  // The order of tokens within a page matters.
  const std::vector<int32_t> swapped = {2, 1, 3, 4};
  EXPECT_NE(a0, chain_page_hash(kPrefixChainRoot, swapped.data(), 4, salt));
}

TEST(PrefixIndex, FindInsertAndFirstRegistrationWins) {
  PrefixIndex ix(4);
  const PrefixKey k{123, 0}, k_other_layer{123, 1};
  EXPECT_EQ(ix.find(k), -1);
  EXPECT_TRUE(ix.insert(k, 2));
  EXPECT_EQ(ix.find(k), 2);
  EXPECT_EQ(ix.find(k_other_layer), -1) << "keys are per layer";
  EXPECT_FALSE(ix.insert(k, 3)) << "key taken";
  EXPECT_FALSE(ix.insert({456, 0}, 2)) << "page registered already";
  EXPECT_FALSE(ix.insert({789, 0}, 4)) << "page out of range";
  EXPECT_EQ(ix.find(k), 2);
  EXPECT_EQ(ix.n_registered(), 1);
}

TEST(PrefixIndex, EvictsLeastRecentlyParkedFirst) {
  PrefixIndex ix(5);
  for (int32_t p = 0; p < 5; ++p) ASSERT_TRUE(ix.insert({(uint64_t)(100 + p), 0}, p));
  for (int32_t p : {3, 1, 4, 0}) ix.park(p);
  ix.unpark(1);  // referenced again: not evictable
  ix.park(1);    // released again: now the most recent
  EXPECT_EQ(ix.n_parked(), 4);
  std::vector<int32_t> order;
  for (int32_t p; (p = ix.evict_lru()) >= 0;) order.push_back(p);
  EXPECT_EQ(order, (std::vector<int32_t>{3, 4, 0, 1}));
  EXPECT_EQ(ix.n_parked(), 0);
  EXPECT_EQ(ix.n_registered(), 1) << "page 2 was never parked";
  EXPECT_EQ(ix.find({103, 0}), -1) << "evicted keys are gone";
  EXPECT_EQ(ix.find({102, 0}), 2);
}

TEST(PageManagerCache, CachedPageIsReclaimedOnlyWhenUnreferenced) {
  PageManager pm(3);
  std::vector<int32_t> a;
  ASSERT_TRUE(pm.allocate(2, a).ok());
  ASSERT_TRUE(pm.register_page({7, 0}, a[0]));
  EXPECT_FALSE(pm.register_page({8, 0}, 2)) << "an unallocated page cannot be registered";
  pm.retain(a[0]);  // shared by a second sequence
  EXPECT_EQ(pm.ref_count(a[0]), 2);
  pm.release(a[0]);
  EXPECT_EQ(pm.n_used(), 2) << "still referenced once";
  EXPECT_EQ(pm.n_reclaimable(), 0);

  // Fill the pool: the referenced cached page must never be handed out.
  std::vector<int32_t> b;
  ASSERT_TRUE(pm.allocate(1, b).ok());
  EXPECT_EQ(pm.allocate(1, b).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pm.lookup({7, 0}), a[0]);

  // Last reference gone: cached, reclaimable, counted as free but not used.
  pm.release(a[0]);
  EXPECT_EQ(pm.ref_count(a[0]), 0);
  EXPECT_EQ(pm.n_used(), 2);
  EXPECT_EQ(pm.n_free(), 1);
  EXPECT_EQ(pm.n_cached(), 1);
  EXPECT_EQ(pm.n_reclaimable(), 1);
  EXPECT_EQ(pm.lookup({7, 0}), a[0]);

  // Revived by a hit: used again, no longer reclaimable.
  pm.retain(a[0]);
  EXPECT_EQ(pm.ref_count(a[0]), 1);
  EXPECT_EQ(pm.n_reclaimable(), 0);
  EXPECT_EQ(pm.n_free(), 0);
  pm.release(a[0]);

  // An allocation with an empty free list evicts it.
  std::vector<int32_t> c;
  ASSERT_TRUE(pm.allocate(1, c).ok());
  EXPECT_EQ(c[0], a[0]);
  EXPECT_EQ(pm.lookup({7, 0}), -1);
  EXPECT_EQ(pm.n_cached(), 0);
  EXPECT_EQ(pm.n_evicted(), 1);
  EXPECT_EQ(pm.ref_count(c[0]), 1);
}

TEST(PageManagerCache, FreeListBeforeEvictionAndLruOrder) {
  PageManager pm(4);
  std::vector<int32_t> pages;
  ASSERT_TRUE(pm.allocate(3, pages).ok());
  for (size_t i = 0; i < pages.size(); ++i) ASSERT_TRUE(pm.register_page({(uint64_t)i, 0}, pages[i]));
  // Released in the order 2, 0, 1: evicted in that order.
  for (size_t i : {2u, 0u, 1u}) pm.release(pages[i]);
  EXPECT_EQ(pm.n_used(), 0);
  EXPECT_EQ(pm.n_free(), 4);
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(1, got).ok());
  EXPECT_EQ(pm.n_cached(), 3) << "the never-used page comes first, nothing evicted";
  ASSERT_TRUE(pm.allocate(2, got).ok());
  EXPECT_EQ(got[1], pages[2]);
  EXPECT_EQ(got[2], pages[0]);
  EXPECT_EQ(pm.lookup({1, 0}), pages[1]) << "the most recently released survives";
  // All or nothing: 2 asked, 1 reclaimable: no eviction happens.
  std::vector<int32_t> more;
  EXPECT_EQ(pm.allocate(2, more).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(pm.n_cached(), 1);
  EXPECT_EQ(pm.n_evicted(), 2);
}

TEST(PageManagerCache, AccountingReturnsToBaseline) {
  PageManager pm(16);
  std::vector<int32_t> s1, s2;
  ASSERT_TRUE(pm.allocate(6, s1).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pm.register_page({(uint64_t)i, 0}, s1[i]));
  // A second "sequence" shares the 4 cached pages and owns 3 of its own.
  for (int i = 0; i < 4; ++i) {
    pm.retain(pm.lookup({(uint64_t)i, 0}));
    s2.push_back(pm.lookup({(uint64_t)i, 0}));
  }
  ASSERT_TRUE(pm.allocate(3, s2).ok());
  EXPECT_EQ(pm.n_used(), 9);
  for (int32_t p : s1) pm.release(p);
  EXPECT_EQ(pm.n_used(), 7) << "the shared pages stay in use";
  for (int32_t p : s2) pm.release(p);
  EXPECT_EQ(pm.n_used(), 0);
  EXPECT_EQ(pm.n_free(), 16);
  EXPECT_EQ(pm.n_cached(), 4);
  EXPECT_EQ(pm.n_reclaimable(), 4);
  for (int p = 0; p < 16; ++p) EXPECT_EQ(pm.ref_count(p), 0);
  // The whole pool can still be allocated: every cached page is reclaimed.
  std::vector<int32_t> all;
  ASSERT_TRUE(pm.allocate(16, all).ok());
  EXPECT_EQ(std::set<int32_t>(all.begin(), all.end()).size(), 16u);
  EXPECT_EQ(pm.n_cached(), 0);
  for (int32_t p : all) pm.release(p);
  EXPECT_EQ(pm.n_free(), 16);
  EXPECT_EQ(pm.n_reclaimable(), 0);
}

}  // namespace
}  // namespace stride

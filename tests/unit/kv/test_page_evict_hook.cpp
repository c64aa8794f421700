// PageManager's eviction hook: every cached page allocate() evicts is shown
// to the hook, with its prefix key, before it is handed out again; pages taken
// from the free list are not. prefix_key_id tells layers and chains apart.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "kv/page_manager.h"

namespace stride {

TEST(PageEvictHook, SeesEvictedCachedPagesInLruOrder) {
  PageManager pm(4);
  std::vector<std::pair<PrefixKey, int32_t>> seen;
  pm.set_on_evict([&](const PrefixKey& key, int32_t page) {
    EXPECT_EQ(pm.lookup(key), -1) << "dropped from the index before the hook runs";
    seen.push_back({key, page});
  });
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(3, got).ok());
  ASSERT_TRUE(pm.register_page({11, 0}, got[0]));
  ASSERT_TRUE(pm.register_page({22, 1}, got[1]));
  pm.release(got[1]);  // parked first: least recently used
  pm.release(got[0]);
  pm.release(got[2]);  // not registered: back to the free list
  EXPECT_EQ(pm.n_reclaimable(), 2);

  std::vector<int32_t> more;
  ASSERT_TRUE(pm.allocate(2, more).ok());  // the 2 free pages: no eviction
  EXPECT_TRUE(seen.empty());
  ASSERT_TRUE(pm.allocate(2, more).ok());  // both cached pages, oldest first
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, (PrefixKey{22, 1}));
  EXPECT_EQ(seen[0].second, got[1]);
  EXPECT_EQ(seen[1].first, (PrefixKey{11, 0}));
  EXPECT_EQ(seen[1].second, got[0]);
  EXPECT_EQ(pm.n_evicted(), 2);
  EXPECT_EQ(pm.n_cached(), 0);
}

TEST(PageEvictHook, KeyIdsDifferAcrossLayersAndChains) {
  std::set<uint64_t> ids;
  for (uint64_t chain : {1ull, 2ull, 0x6a09e667f3bcc908ull})
    for (int32_t layer = 0; layer < 64; ++layer) ids.insert(prefix_key_id({chain, layer}));
  EXPECT_EQ(ids.size(), 3u * 64u);
  EXPECT_EQ(prefix_key_id({5, 3}), prefix_key_id({5, 3}));
}

}  // namespace stride

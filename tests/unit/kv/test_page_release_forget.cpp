// PageManager::release_forget: the last reference to a registered page drops
// it from the prefix index and frees it at once (returning its key, no
// eviction hook); shared and unregistered pages behave as with release().
#include <gtest/gtest.h>

#include <vector>

#include "kv/page_manager.h"

namespace stride {
namespace {

TEST(PageReleaseForget, LastReferenceToARegisteredPageLeavesTheIndex) {
  PageManager pm(4);
  int hooks = 0;
  pm.set_on_evict([&](const PrefixKey&, int32_t) { ++hooks; });
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(2, got).ok());
  const PrefixKey key{0x1234, 3};
  ASSERT_TRUE(pm.register_page(key, got[0]));
  pm.retain(got[0]);  // shared by two sequences
  PrefixKey out;
  EXPECT_FALSE(pm.release_forget(got[0], &out)) << "still referenced";
  EXPECT_EQ(pm.lookup(key), got[0]);
  EXPECT_TRUE(pm.release_forget(got[0], &out));
  EXPECT_EQ(out, key);
  EXPECT_EQ(pm.lookup(key), -1);
  EXPECT_EQ(pm.n_cached(), 0);
  EXPECT_EQ(pm.n_reclaimable(), 0) << "not parked";
  EXPECT_EQ(hooks, 0) << "the caller keeps the contents";
  // An unregistered page is simply freed.
  EXPECT_FALSE(pm.release_forget(got[1], &out));
  EXPECT_EQ(pm.n_used(), 0);
  EXPECT_EQ(pm.n_free(), 4);
  // The freed page is handed out again.
  std::vector<int32_t> again;
  ASSERT_TRUE(pm.allocate(4, again).ok());
  EXPECT_EQ(hooks, 0);
}

}  // namespace
}  // namespace stride

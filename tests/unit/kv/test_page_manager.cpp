#include "kv/page_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace stride {

TEST(PageManager, AllocatesDistinctPagesWithRefCountOne) {
  PageManager pm(8);
  EXPECT_EQ(pm.n_total(), 8);
  EXPECT_EQ(pm.n_free(), 8);
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(5, got).ok());
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()).size(), 5u);
  for (int32_t p : got) {
    EXPECT_GE(p, 0);
    EXPECT_LT(p, 8);
    EXPECT_EQ(pm.ref_count(p), 1);
  }
  EXPECT_EQ(pm.n_used(), 5);
  EXPECT_EQ(pm.n_free(), 3);
}

TEST(PageManager, AllOrNothingOnExhaustion) {
  PageManager pm(4);
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(3, got).ok());
  std::vector<int32_t> more = {42};  // existing content must survive a failure
  const Status st = pm.allocate(2, more);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(more, std::vector<int32_t>{42});
  EXPECT_EQ(pm.n_free(), 1);
  EXPECT_TRUE(pm.allocate(1, more).ok());
  EXPECT_EQ(more.size(), 2u);
  EXPECT_EQ(pm.n_free(), 0);
  EXPECT_EQ(pm.allocate(1, more).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(pm.allocate(0, more).ok());
}

TEST(PageManager, RefCountsKeepSharedPagesAllocated) {
  PageManager pm(2);
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(1, got).ok());
  const int32_t p = got[0];
  pm.retain(p);
  EXPECT_EQ(pm.ref_count(p), 2);
  pm.release(p);
  EXPECT_EQ(pm.ref_count(p), 1);
  EXPECT_EQ(pm.n_free(), 1);
  pm.release(p);
  EXPECT_EQ(pm.ref_count(p), 0);
  EXPECT_EQ(pm.n_free(), 2);
}

TEST(PageManager, FreeListIsLifo) {
  PageManager pm(6);
  std::vector<int32_t> got;
  ASSERT_TRUE(pm.allocate(6, got).ok());
  pm.release(got[2]);
  pm.release(got[4]);
  std::vector<int32_t> again;
  ASSERT_TRUE(pm.allocate(2, again).ok());
  EXPECT_EQ(again[0], got[4]);  // most recently freed first
  EXPECT_EQ(again[1], got[2]);
}

TEST(PageManager, NegativeCountIsAnError) {
  PageManager pm(2);
  std::vector<int32_t> got;
  EXPECT_EQ(pm.allocate(-1, got).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(pm.n_free(), 2);
}

}  // namespace stride

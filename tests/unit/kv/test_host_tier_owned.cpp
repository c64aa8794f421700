// Owned slots of the offload tier (cold top-k pages): a namespace of their
// own, never evicted, refused with ResourceExhausted when no slot can be had,
// freed by erase (at unpin when pinned).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kv/store/host_tier.h"

namespace stride {
namespace {

constexpr int64_t kSlot = 256;

std::vector<uint8_t> image(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v((size_t)kSlot);
  for (uint8_t& b : v) b = (uint8_t)rng();
  return v;
}

std::unique_ptr<HostTier> tier_of(int64_t slots) {
  HostTierOptions o;
  o.capacity_bytes = slots * kSlot;
  o.slot_bytes = kSlot;
  auto t = HostTier::create(o);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(*t);
}

bool holds(HostTier& t, uint64_t key, TierSpace space, uint32_t seed) {
  auto p = t.pin(key, space);
  if (!p) return false;
  const auto want = image(seed);
  return std::equal(want.begin(), want.end(), p->bytes().begin());
}

TEST(HostTierOwned, SameKeyInBothSpacesIsTwoSlots) {
  auto t = tier_of(4);
  ASSERT_TRUE(t->put(7, image(1), TierSpace::Cache).ok());
  ASSERT_TRUE(t->put(7, image(2), TierSpace::Owned).ok());
  EXPECT_EQ(t->stats().slots_used, 2);
  EXPECT_EQ(t->stats().slots_owned, 1);
  EXPECT_TRUE(holds(*t, 7, TierSpace::Cache, 1));
  EXPECT_TRUE(holds(*t, 7, TierSpace::Owned, 2));
  t->erase(7);  // the Cache one
  EXPECT_FALSE(t->contains(7, TierSpace::Cache));
  EXPECT_TRUE(holds(*t, 7, TierSpace::Owned, 2));
}

TEST(HostTierOwned, OwnedSlotsAreNeverEvicted) {
  auto t = tier_of(3);
  ASSERT_TRUE(t->put(1, image(1), TierSpace::Owned).ok());
  ASSERT_TRUE(t->put(2, image(2), TierSpace::Cache).ok());
  ASSERT_TRUE(t->put(3, image(3), TierSpace::Owned).ok());
  // Full: a new Owned page takes the Cache slot, the only evictable one.
  ASSERT_TRUE(t->put(4, image(4), TierSpace::Owned).ok());
  EXPECT_FALSE(t->contains(2, TierSpace::Cache));
  EXPECT_EQ(t->stats().evictions, 1);
  // Nothing evictable is left: both spaces are refused and nothing changes.
  const Status owned = t->put(5, image(5), TierSpace::Owned);
  EXPECT_EQ(owned.code(), StatusCode::kResourceExhausted) << owned.to_string();
  const Status cached = t->put(6, image(6), TierSpace::Cache);
  EXPECT_EQ(cached.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(holds(*t, 1, TierSpace::Owned, 1));
  EXPECT_TRUE(holds(*t, 3, TierSpace::Owned, 3));
  EXPECT_TRUE(holds(*t, 4, TierSpace::Owned, 4));
  EXPECT_EQ(t->stats().slots_owned, 3);
  // Erasing one makes room again.
  t->erase(3, TierSpace::Owned);
  EXPECT_EQ(t->stats().slots_owned, 2);
  EXPECT_TRUE(t->put(5, image(5), TierSpace::Owned).ok());
}

TEST(HostTierOwned, ErasedWhilePinnedIsFreedAtUnpin) {
  auto t = tier_of(2);
  ASSERT_TRUE(t->put(1, image(1), TierSpace::Owned).ok());
  {
    auto p = t->pin(1, TierSpace::Owned);
    ASSERT_TRUE(p.has_value());
    t->erase(1, TierSpace::Owned);
    EXPECT_FALSE(t->contains(1, TierSpace::Owned));
    EXPECT_EQ(t->stats().slots_used, 1) << "still pinned";
    const auto want = image(1);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), p->bytes().begin())) << "pinned bytes stay valid";
  }
  EXPECT_EQ(t->stats().slots_used, 0);
  EXPECT_EQ(t->stats().slots_owned, 0);
}

TEST(HostTierOwned, PrefetchCountsKeysFoundInTheirSpace) {
  auto t = tier_of(4);
  ASSERT_TRUE(t->put(1, image(1), TierSpace::Owned).ok());
  ASSERT_TRUE(t->put(2, image(2), TierSpace::Cache).ok());
  const std::vector<uint64_t> keys{1, 2, 3};
  EXPECT_EQ(t->prefetch(keys, TierSpace::Owned), 1);
  EXPECT_EQ(t->prefetch(keys, TierSpace::Cache), 1);
}

TEST(HostTierOwned, DisownedSlotJoinsTheCacheSpaceAndCanBeEvicted) {
  auto t = tier_of(2);
  ASSERT_TRUE(t->put(1, image(1), TierSpace::Owned).ok());
  ASSERT_TRUE(t->put(2, image(2), TierSpace::Owned).ok());
  EXPECT_EQ(t->put(3, image(3), TierSpace::Cache).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(t->disown(1, 99));
  EXPECT_FALSE(t->disown(1, 98)) << "no longer owned";
  EXPECT_FALSE(t->contains(1, TierSpace::Owned));
  EXPECT_TRUE(holds(*t, 99, TierSpace::Cache, 1)) << "same bytes, now under the cache key";
  EXPECT_EQ(t->stats().slots_owned, 1);
  EXPECT_EQ(t->stats().slots_used, 2);
  // Now evictable: a new page takes its slot.
  ASSERT_TRUE(t->put(3, image(3), TierSpace::Cache).ok());
  EXPECT_FALSE(t->contains(99, TierSpace::Cache));
  EXPECT_TRUE(holds(*t, 2, TierSpace::Owned, 2));
}

}  // namespace
}  // namespace stride

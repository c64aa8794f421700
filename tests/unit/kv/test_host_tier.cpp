// The offload tier: bit-exact round trips in RAM and file-backed modes, LRU
// eviction, pinning, and clear errors for sizes that cannot work.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "kv/store/host_tier.h"

namespace stride {
namespace {

std::vector<uint8_t> page_image(int64_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v((size_t)bytes);
  for (uint8_t& b : v) b = (uint8_t)rng();
  return v;
}

std::unique_ptr<HostTier> make_tier(int64_t slots, int64_t slot_bytes, const std::string& file = "") {
  HostTierOptions o;
  o.capacity_bytes = slots * slot_bytes;
  o.slot_bytes = slot_bytes;
  o.file = file;
  auto t = HostTier::create(o);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(*t);
}

void round_trip(HostTier& tier) {
  const int64_t sb = tier.slot_bytes();
  for (uint64_t key = 0; key < 4; ++key) ASSERT_TRUE(tier.put(key * 977, page_image(sb, (uint32_t)key)).ok());
  for (uint64_t key = 0; key < 4; ++key) {
    auto pinned = tier.pin(key * 977);
    ASSERT_TRUE(pinned.has_value());
    const auto want = page_image(sb, (uint32_t)key);
    ASSERT_EQ(pinned->bytes().size(), want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), pinned->bytes().begin()));
  }
}

TEST(HostTier, RoundTripIsBitExactInRam) {
  auto tier = make_tier(4, 12345);
  round_trip(*tier);
}

TEST(HostTier, RoundTripIsBitExactInAFileThatIsRemovedAtOnce) {
  const std::string file = testing::TempDir() + "/stride_host_tier_" + std::to_string(getpid());
  {
    auto tier = make_tier(4, 8192, file);
    round_trip(*tier);
    EXPECT_FALSE(std::filesystem::exists(file)) << "scratch space: unlinked as soon as it is created";
    const uint64_t keys[] = {0, 977, 5};
    tier->prefetch(keys);
  }
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(HostTier, EvictsLeastRecentlyUsed) {
  auto tier = make_tier(3, 64);
  for (uint64_t k = 1; k <= 3; ++k) ASSERT_TRUE(tier->put(k, page_image(64, (uint32_t)k)).ok());
  ASSERT_TRUE(tier->pin(1).has_value());  // 1 becomes most recent (pin released at once)
  ASSERT_TRUE(tier->put(4, page_image(64, 4)).ok());  // evicts 2
  EXPECT_TRUE(tier->contains(1));
  EXPECT_FALSE(tier->contains(2));
  EXPECT_TRUE(tier->contains(3));
  EXPECT_TRUE(tier->contains(4));
  EXPECT_EQ(tier->stats().evictions, 1);
  EXPECT_EQ(tier->stats().slots_used, 3);
}

TEST(HostTier, PinnedSlotsAreNotEvicted) {
  auto tier = make_tier(2, 64);
  ASSERT_TRUE(tier->put(1, page_image(64, 1)).ok());
  ASSERT_TRUE(tier->put(2, page_image(64, 2)).ok());
  auto a = tier->pin(1);
  auto b = tier->pin(2);
  const Status full = tier->put(3, page_image(64, 3));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.to_string();
  EXPECT_FALSE(tier->contains(3));
  b.reset();  // unpin 2: now it can go
  ASSERT_TRUE(tier->put(3, page_image(64, 3)).ok());
  EXPECT_TRUE(tier->contains(1));
  EXPECT_FALSE(tier->contains(2));
  const auto want = page_image(64, 1);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), a->bytes().begin()));
}

TEST(HostTier, EraseWhilePinnedFreesOnUnpin) {
  auto tier = make_tier(1, 64);
  ASSERT_TRUE(tier->put(7, page_image(64, 7)).ok());
  {
    auto p = tier->pin(7);
    tier->erase(7);
    EXPECT_FALSE(tier->contains(7));
    EXPECT_EQ(tier->stats().slots_used, 1);  // still readable by the holder
    PinnedPage moved = std::move(*p);
    EXPECT_TRUE((bool)moved);
    EXPECT_FALSE((bool)*p);
  }
  EXPECT_EQ(tier->stats().slots_used, 0);
  EXPECT_TRUE(tier->put(8, page_image(64, 8)).ok());
}

TEST(HostTier, MissesAndHitsAreCounted) {
  auto tier = make_tier(2, 64);
  EXPECT_FALSE(tier->pin(42).has_value());
  ASSERT_TRUE(tier->put(42, page_image(64, 1)).ok());
  EXPECT_TRUE(tier->pin(42).has_value());
  EXPECT_EQ(tier->stats().hits, 1);
  EXPECT_EQ(tier->stats().misses, 1);
}

TEST(HostTier, RejectsImpossibleSizes) {
  HostTierOptions o;
  o.slot_bytes = 0;
  o.capacity_bytes = 1024;
  EXPECT_EQ(HostTier::create(o).status().code(), StatusCode::kInvalidArgument);
  o.slot_bytes = 2048;
  EXPECT_EQ(HostTier::create(o).status().code(), StatusCode::kInvalidArgument);
  o.slot_bytes = 64;
  o.file = "/nonexistent-dir/tier";
  EXPECT_FALSE(HostTier::create(o).ok());
  auto tier = make_tier(1, 64);
  EXPECT_EQ(tier->put(1, page_image(63, 1)).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stride

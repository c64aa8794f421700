// PrefixChains: prefix ids are exact. With a hash that makes every entry
// collide, a prefix that differs in one token, or that has the same page
// after a different parent, is a miss (kNoPrefixChain), never the id of the
// prefix it collides with; the same prefix is still found; the table forgets
// its least recently used entry past its capacity; and the default hash is
// the keyed chain_page_hash.
#include <gtest/gtest.h>

#include <vector>

#include "kv/prefix_chains.h"
#include "kv/prefix_index.h"

namespace stride {
namespace {

PrefixChains::HashFn constant_hash() {
  return [](uint64_t, std::span<const int32_t>) { return uint64_t(42); };
}

TEST(PrefixChains, ACollisionIsAMissNotAnotherPrefixesId) {
  PrefixChains chains(1024, 7, constant_hash());
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5};
  const uint64_t ida = chains.intern(kPrefixChainRoot, a);
  ASSERT_NE(ida, kNoPrefixChain);
  EXPECT_EQ(chains.find(kPrefixChainRoot, b), kNoPrefixChain) << "one token differs: same hash, still a miss";
  EXPECT_GE(chains.collisions(), 1);
  EXPECT_EQ(chains.find(kPrefixChainRoot, a), ida);

  const uint64_t idb = chains.intern(kPrefixChainRoot, b);
  EXPECT_NE(idb, ida);
  // The same page after two different parents: two prefixes.
  const uint64_t a_then_b = chains.intern(ida, b);
  EXPECT_NE(a_then_b, idb);
  EXPECT_EQ(chains.find(idb, b), kNoPrefixChain);
  EXPECT_EQ(chains.find(ida, b), a_then_b);
  EXPECT_EQ(chains.size(), 3u);
}

TEST(PrefixChains, NothingIsKnownBelowAnUnknownPrefix) {
  PrefixChains chains(16, 0, {});
  const std::vector<int32_t> a = {9, 9};
  EXPECT_EQ(chains.find(kNoPrefixChain, a), kNoPrefixChain);
  EXPECT_EQ(chains.intern(kNoPrefixChain, a), kNoPrefixChain);
  EXPECT_EQ(chains.size(), 0u);
}

TEST(PrefixChains, ForgetsTheLeastRecentlyUsedPastItsCapacity) {
  PrefixChains chains(2, 0, {});
  const std::vector<int32_t> p0 = {0}, p1 = {1}, p2 = {2};
  const uint64_t i0 = chains.intern(kPrefixChainRoot, p0);
  const uint64_t i1 = chains.intern(kPrefixChainRoot, p1);
  EXPECT_EQ(chains.find(kPrefixChainRoot, p0), i0);  // p1 is now the least recent
  const uint64_t i2 = chains.intern(kPrefixChainRoot, p2);
  EXPECT_EQ(chains.size(), 2u);
  EXPECT_EQ(chains.find(kPrefixChainRoot, p1), kNoPrefixChain);
  EXPECT_EQ(chains.find(kPrefixChainRoot, p0), i0);
  EXPECT_EQ(chains.find(kPrefixChainRoot, p2), i2);
  const uint64_t again = chains.intern(kPrefixChainRoot, p1);
  EXPECT_NE(again, i1) << "ids are never reused: pages under the forgotten id stay unreachable";
}

TEST(PrefixChains, ManyPrefixesUnderTheDefaultKeyedHash) {
  PrefixChains chains(1 << 12, prefix_salt("m"), {});
  std::vector<uint64_t> ids;
  for (int32_t t = 0; t < 1000; ++t) {
    const std::vector<int32_t> page = {t, t + 1, t + 2};
    ids.push_back(chains.intern(kPrefixChainRoot, page));
  }
  for (int32_t t = 0; t < 1000; ++t) {
    const std::vector<int32_t> page = {t, t + 1, t + 2};
    EXPECT_EQ(chains.find(kPrefixChainRoot, page), ids[(size_t)t]);
  }
  EXPECT_EQ(chains.collisions(), 0);
}

}  // namespace
}  // namespace stride

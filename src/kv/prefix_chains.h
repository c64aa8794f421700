#pragma once
// Exact names for token prefixes, one per full page: the prefix-cache key of
// a page is the id of (the id of the prefix before it, the page's tokens).
// The pair is stored with its id and compared in full on every lookup, so
// two different prefixes can never share an id, however their hashes
// collide: a colliding prefix is a miss, never another request's KV pages.
// The hash (keyed SipHash-2-4 by default, chain_page_hash) only picks the
// bucket; a test injects its own to force collisions.
//
// Ids are a counter (never reused), so the prefix index and the offload tier
// key pages by them exactly. The table is bounded: past `capacity` entries
// the least recently used is forgotten; its prefix, and everything below it,
// then misses (pages registered under a forgotten id are never found again
// and age out of the cache like any unreferenced page).
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace stride {

// The id no prefix gets: an unknown prefix.
inline constexpr uint64_t kNoPrefixChain = 0;

class PrefixChains {
 public:
  using HashFn = std::function<uint64_t(uint64_t parent, std::span<const int32_t> tokens)>;

  PrefixChains() : PrefixChains(1, 0, {}) {}
  // hash empty: chain_page_hash(parent, tokens, salt), keyed per process.
  PrefixChains(size_t capacity, uint64_t salt, HashFn hash);

  // The id of `parent` followed by `tokens`, or kNoPrefixChain. A hit
  // becomes the most recently used entry.
  uint64_t find(uint64_t parent, std::span<const int32_t> tokens);
  // find(), else a new id for it.
  uint64_t intern(uint64_t parent, std::span<const int32_t> tokens);

  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }
  // Lookups whose bucket hash matched an entry with other tokens or another parent.
  int64_t collisions() const { return collisions_; }

 private:
  struct Key {
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    const HashFn* fn = nullptr;
    size_t operator()(const Key& k) const { return (size_t)(*fn)(k.parent, k.tokens); }
  };
  struct Entry {
    uint64_t id = 0;
    std::list<const Key*>::iterator lru;
  };
  using Map = std::unordered_map<Key, Entry, KeyHash>;
  Map::iterator lookup(uint64_t parent, std::span<const int32_t> tokens);

  size_t capacity_ = 1;
  uint64_t salt_ = 0;
  std::unique_ptr<HashFn> hash_;  // stable address: the map's hasher points at it
  Map map_;
  std::list<const Key*> lru_;  // least recently used first; keys live in map_
  uint64_t next_id_ = 1;
  int64_t collisions_ = 0;
};

}  // namespace stride

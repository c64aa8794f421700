#include "kv/prefix_chains.h"

#include <algorithm>

#include "kv/prefix_index.h"

namespace stride {

PrefixChains::PrefixChains(size_t capacity, uint64_t salt, HashFn hash)
    : capacity_(std::max<size_t>(capacity, 1)),
      salt_(salt),
      hash_(std::make_unique<HashFn>(std::move(hash))),
      map_(16, KeyHash{hash_.get()}) {
  if (!*hash_) {
    const uint64_t s = salt_;
    *hash_ = [s](uint64_t parent, std::span<const int32_t> tokens) {
      return chain_page_hash(parent, tokens.data(), (int)tokens.size(), s);
    };
  }
}

PrefixChains::Map::iterator PrefixChains::lookup(uint64_t parent, std::span<const int32_t> tokens) {
  Key key{parent, std::vector<int32_t>(tokens.begin(), tokens.end())};
  const auto it = map_.find(key);
  if (it == map_.end()) {
    // Same bucket hash, other contents: counted, then treated as the miss it is.
    const size_t h = map_.hash_function()(key);
    const size_t b = map_.bucket(key);
    for (auto l = map_.begin(b); l != map_.end(b); ++l)
      if (map_.hash_function()(l->first) == h) {
        ++collisions_;
        break;
      }
    return map_.end();
  }
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return it;
}

uint64_t PrefixChains::find(uint64_t parent, std::span<const int32_t> tokens) {
  if (parent == kNoPrefixChain) return kNoPrefixChain;  // below an unknown prefix nothing is known
  const auto it = lookup(parent, tokens);
  return it == map_.end() ? kNoPrefixChain : it->second.id;
}

uint64_t PrefixChains::intern(uint64_t parent, std::span<const int32_t> tokens) {
  if (parent == kNoPrefixChain) return kNoPrefixChain;
  if (const auto it = lookup(parent, tokens); it != map_.end()) return it->second.id;
  while (map_.size() >= capacity_) {
    const auto oldest = map_.find(*lru_.front());
    lru_.pop_front();
    map_.erase(oldest);
  }
  auto [it, inserted] = map_.emplace(Key{parent, std::vector<int32_t>(tokens.begin(), tokens.end())}, Entry{});
  it->second.id = next_id_++;
  it->second.lru = lru_.insert(lru_.end(), &it->first);
  return it->second.id;
}

}  // namespace stride

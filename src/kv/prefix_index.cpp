#include "kv/prefix_index.h"

#include <algorithm>
#include <cassert>

#include "core/siphash.h"

namespace stride {

namespace {

// splitmix64's finaliser: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t prefix_salt(std::string_view text) { return siphash24(process_sip_key(), text.data(), text.size()); }

uint64_t chain_page_hash(uint64_t prev, const int32_t* tokens, int n, uint64_t salt) {
  // One SipHash message: prev | salt | tokens, all little-endian.
  uint8_t stack[16 + 4 * 64];
  std::vector<uint8_t> heap;
  const size_t bytes = 16 + 4 * (size_t)std::max(n, 0);
  uint8_t* m = bytes <= sizeof stack ? stack : (heap.resize(bytes), heap.data());
  for (int i = 0; i < 8; ++i) {
    m[i] = uint8_t(prev >> (8 * i));
    m[8 + i] = uint8_t(salt >> (8 * i));
  }
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < 4; ++i) m[16 + 4 * t + i] = uint8_t((uint32_t)tokens[t] >> (8 * i));
  return siphash24(process_sip_key(), m, bytes);
}

PrefixIndex::PrefixIndex(int32_t n_pages)
    : key_of_((size_t)n_pages),
      registered_((size_t)n_pages, 0),
      prev_((size_t)n_pages, -1),
      next_((size_t)n_pages, -1),
      parked_((size_t)n_pages, 0) {}

int32_t PrefixIndex::find(const PrefixKey& key) const {
  const auto it = map_.find(key);
  return it == map_.end() ? -1 : it->second;
}

bool PrefixIndex::insert(const PrefixKey& key, int32_t page) {
  if (page < 0 || page >= (int32_t)registered_.size() || registered_[(size_t)page]) return false;
  if (!map_.emplace(key, page).second) return false;
  key_of_[(size_t)page] = key;
  registered_[(size_t)page] = 1;
  return true;
}

void PrefixIndex::park(int32_t page) {
  assert(registered(page) && !parked(page));
  if (!registered(page) || parked(page)) return;
  parked_[(size_t)page] = 1;
  prev_[(size_t)page] = tail_;
  next_[(size_t)page] = -1;
  if (tail_ >= 0) next_[(size_t)tail_] = page;
  else head_ = page;
  tail_ = page;
  ++n_parked_;
}

void PrefixIndex::unlink(int32_t page) {
  const int32_t p = prev_[(size_t)page], n = next_[(size_t)page];
  if (p >= 0) next_[(size_t)p] = n;
  else head_ = n;
  if (n >= 0) prev_[(size_t)n] = p;
  else tail_ = p;
  prev_[(size_t)page] = next_[(size_t)page] = -1;
  parked_[(size_t)page] = 0;
  --n_parked_;
}

void PrefixIndex::unpark(int32_t page) {
  if (parked(page)) unlink(page);
}

// Chains are PrefixChains ids (< 2^48) and layers < 2^16, so the packed
// value is unique and mix, a bijection, keeps it unique: tier keys of two
// different pages never collide.
uint64_t prefix_key_id(const PrefixKey& key) {
  return mix((key.chain << 16) + (uint64_t)(uint16_t)key.layer);
}

int32_t PrefixIndex::evict_lru(PrefixKey* key) {
  const int32_t page = head_;
  return page >= 0 && evict(page, key) ? page : -1;
}

bool PrefixIndex::evict(int32_t page, PrefixKey* key) {
  if (!parked(page)) return false;
  unlink(page);
  if (key) *key = key_of_[(size_t)page];
  map_.erase(key_of_[(size_t)page]);
  registered_[(size_t)page] = 0;
  return true;
}

}  // namespace stride

#pragma once
// Prefix caching bookkeeping (vLLM-style automatic prefix caching). A full KV
// page is registered under a key: the id of every token up to the page's end
// (a PrefixChains id: exact, never shared by two prefixes) and the layer. A
// later sequence with the same prefix maps the same physical pages instead of
// recomputing them.
//
// Registered pages that no sequence references stay cached ("parked") and are
// evicted least recently parked first, only when an allocation needs room.
// Pure bookkeeping: no tensors, so it is tested on its own.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stride {

// The chain starts from this value before the first page.
inline constexpr uint64_t kPrefixChainRoot = 0x6a09e667f3bcc908ull;

// Hash of a salt string (model version, layer policies, ...): keyed
// SipHash-2-4 under the process key (core/siphash.h).
uint64_t prefix_salt(std::string_view text);

// Chained hash of one full page: SipHash-2-4(prev, salt, the page's tokens)
// under a random per-process key, so clients cannot choose prompts whose
// hashes collide. PrefixChains uses it to find a page's entry, then compares
// the tokens themselves: the hash is never the identity.
//   tokens: [n]
uint64_t chain_page_hash(uint64_t prev, const int32_t* tokens, int n, uint64_t salt);

struct PrefixKey {
  uint64_t chain = 0;  // PrefixChains id of the prefix ending with the page
  int32_t layer = 0;
  bool operator==(const PrefixKey&) const = default;
};

// One 64-bit name for a PrefixKey (the chain packed with the layer, then
// mixed; unique for chains below 2^48): the key of an offloaded page in the
// host tier.
uint64_t prefix_key_id(const PrefixKey& key);

class PrefixIndex {
 public:
  explicit PrefixIndex(int32_t n_pages);

  // The page registered under `key`, or -1.
  int32_t find(const PrefixKey& key) const;
  // Registers `page` under `key`; false (nothing changes) when the key is
  // taken by another page or the page is registered already.
  bool insert(const PrefixKey& key, int32_t page);
  bool registered(int32_t page) const { return registered_[(size_t)page] != 0; }

  // LRU of registered pages no sequence references.
  void park(int32_t page);    // its last reference went: the most recent end
  void unpark(int32_t page);  // referenced again
  bool parked(int32_t page) const { return parked_[(size_t)page] != 0; }
  // Drops the least recently parked page from the index and returns it (its
  // key in *key when given); -1 if none.
  int32_t evict_lru(PrefixKey* key = nullptr);
  // Drops this parked page from the index (its key in *key when given);
  // false when it is not parked.
  bool evict(int32_t page, PrefixKey* key = nullptr);

  int32_t n_registered() const { return (int32_t)map_.size(); }
  int32_t n_parked() const { return n_parked_; }

 private:
  struct KeyHash {
    size_t operator()(const PrefixKey& k) const {
      return (size_t)(k.chain ^ (0x9e3779b97f4a7c15ull * (uint64_t)(uint32_t)(k.layer + 1)));
    }
  };
  void unlink(int32_t page);

  std::unordered_map<PrefixKey, int32_t, KeyHash> map_;
  std::vector<PrefixKey> key_of_;    // [n_pages] valid where registered_
  std::vector<uint8_t> registered_;  // [n_pages]
  // Intrusive doubly linked list of parked pages: head_ is the least recent.
  std::vector<int32_t> prev_;   // [n_pages]
  std::vector<int32_t> next_;   // [n_pages]
  std::vector<uint8_t> parked_;  // [n_pages]
  int32_t head_ = -1;
  int32_t tail_ = -1;
  int32_t n_parked_ = 0;
};

}  // namespace stride

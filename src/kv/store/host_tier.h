#pragma once
// The offload tier for cold KV pages: fixed-size slots in host memory, either
// anonymous RAM or a memory-mapped file (so the tier can exceed RAM and the
// kernel pages it to disk). Pages are copied in whole (keys, values,
// positions, scales: whatever the pool's page image holds), so a round trip
// is bit-exact. Slots are found by a 64-bit key within a space and read
// through a move-only PinnedPage that keeps its slot from being evicted.
//   Cache: a prefix page's chained hash and layer; such slots are a cache and
//     are evicted least-recently-used when the tier is full.
//   Owned: a top-k page that lives only here (its pool page was freed); such
//     slots are never evicted (their loss would lose data), only erased by
//     their owner. A put that finds neither a free nor an evictable slot
//     fails with ResourceExhausted.
// The two spaces have separate indexes, so their keys cannot collide.
#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace stride {

struct HostTierOptions {
  int64_t capacity_bytes = 0;  // rounded down to whole slots; must hold at least one
  int64_t slot_bytes = 0;      // one page image
  // Empty: anonymous RAM. Else a new file created at this path (an existing
  // file or symlink is refused), unlinked at once and fully reserved
  // (posix_fallocate) before use: a full disk fails create() with
  // ResourceExhausted instead of a SIGBUS later.
  std::string file;
};

enum class TierSpace : uint8_t { Cache = 0, Owned = 1 };

struct HostTierStats {
  int64_t slots_total = 0;
  int64_t slots_used = 0;
  int64_t slots_owned = 0;  // of slots_used: TierSpace::Owned
  int64_t puts = 0;
  int64_t hits = 0;       // pin() found the key
  int64_t misses = 0;
  int64_t evictions = 0;  // slots dropped to make room
};

class HostTier;

// Read access to one slot; the slot stays resident and unevictable while held.
class PinnedPage {
 public:
  PinnedPage() = default;
  ~PinnedPage();
  PinnedPage(PinnedPage&& other) noexcept;
  PinnedPage& operator=(PinnedPage&& other) noexcept;
  PinnedPage(const PinnedPage&) = delete;
  PinnedPage& operator=(const PinnedPage&) = delete;

  std::span<const uint8_t> bytes() const;
  explicit operator bool() const { return tier_ != nullptr; }

 private:
  friend class HostTier;
  PinnedPage(HostTier* tier, int64_t slot) : tier_(tier), slot_(slot) {}
  void release();
  HostTier* tier_ = nullptr;
  int64_t slot_ = -1;
};

class HostTier {
  struct Private {};

 public:
  HostTier(Private, const HostTierOptions& opts) : opts_(opts) {}
  ~HostTier();
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  static Expected<std::unique_ptr<HostTier>> create(const HostTierOptions& opts);

  // Stores a page image under key (replacing an older one). When every slot
  // is taken the least recently used unpinned Cache slot is evicted; if there
  // is none (all pinned or Owned), ResourceExhausted and nothing changes.
  Status put(uint64_t key, std::span<const uint8_t> page, TierSpace space = TierSpace::Cache);
  // The slot of key, pinned, or nullopt. Counts a hit or a miss; a hit makes
  // the slot most recently used.
  std::optional<PinnedPage> pin(uint64_t key, TierSpace space = TierSpace::Cache);
  bool contains(uint64_t key, TierSpace space = TierSpace::Cache) const {
    return index_[(size_t)space].count(key) != 0;
  }
  // Drops key (no-op when absent). A pinned slot is dropped when unpinned.
  void erase(uint64_t key, TierSpace space = TierSpace::Cache);
  // Hands an Owned slot to the Cache space under cache_key (replacing any
  // slot there) as the most recently used; false when owned_key is absent.
  // A pinned slot is erased instead.
  bool disown(uint64_t owned_key, uint64_t cache_key);
  // Asks the OS to bring these slots in ahead of use (file-backed tiers);
  // returns how many of the keys are in the tier.
  int64_t prefetch(std::span<const uint64_t> keys, TierSpace space = TierSpace::Cache) const;

  HostTierStats stats() const;
  int64_t slot_bytes() const { return opts_.slot_bytes; }

 private:
  friend class PinnedPage;
  struct Slot {
    uint64_t key = 0;
    TierSpace space = TierSpace::Cache;
    bool used = false;
    bool doomed = false;  // erased while pinned
    int pins = 0;
    std::list<int64_t>::iterator lru;  // position in lru_ while unpinned and used
  };
  uint8_t* slot_data(int64_t slot) const { return base_ + slot * opts_.slot_bytes; }
  void unpin(int64_t slot);
  void free_slot(int64_t slot);

  HostTierOptions opts_;
  uint8_t* base_ = nullptr;
  int64_t mapped_bytes_ = 0;
  int fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<int64_t> free_;
  std::list<int64_t> lru_;  // unpinned used Cache slots, least recent first
  std::array<std::unordered_map<uint64_t, int64_t>, 2> index_;  // by TierSpace
  int64_t n_owned_ = 0;  // used Owned slots (doomed ones until unpinned)
  HostTierStats stats_;
};

}  // namespace stride

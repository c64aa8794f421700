#include "kv/store/host_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stride {

PinnedPage::~PinnedPage() { release(); }

PinnedPage::PinnedPage(PinnedPage&& other) noexcept : tier_(other.tier_), slot_(other.slot_) {
  other.tier_ = nullptr;
  other.slot_ = -1;
}

PinnedPage& PinnedPage::operator=(PinnedPage&& other) noexcept {
  if (this != &other) {
    release();
    tier_ = other.tier_;
    slot_ = other.slot_;
    other.tier_ = nullptr;
    other.slot_ = -1;
  }
  return *this;
}

std::span<const uint8_t> PinnedPage::bytes() const {
  if (!tier_) return {};
  return {tier_->slot_data(slot_), (size_t)tier_->slot_bytes()};
}

void PinnedPage::release() {
  if (tier_) tier_->unpin(slot_);
  tier_ = nullptr;
  slot_ = -1;
}

namespace {

// The tier's backing file: created new (O_EXCL|O_NOFOLLOW: an existing file
// or a symlink planted at the path is refused, never truncated or followed),
// unlinked at once (it is scratch space: nothing is left behind after a
// crash, and the next tier, e.g. the next model version's, can take the same
// path), and its blocks reserved now, so a full disk is an error here rather
// than a SIGBUS on some later page write through the mapping.
Expected<int> open_scratch_file(const std::string& path, int64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST || err == ELOOP)
      return InvalidArgument("KV offload file " + path +
                             " exists already (or is a symbolic link): refusing to overwrite it; the tier creates "
                             "its own scratch file there, so remove it or choose a new path");
    return IoError("cannot create the KV offload file " + path + ": " + std::strerror(err));
  }
  ::unlink(path.c_str());
  const int rc = ::posix_fallocate(fd, 0, (off_t)bytes);  // returns the error, not errno
  if (rc != 0) {
    ::close(fd);
    return ResourceExhausted("cannot reserve " + std::to_string(bytes) + " bytes for the KV offload file " + path +
                             ": " + std::strerror(rc));
  }
  return fd;
}

}  // namespace

Expected<std::unique_ptr<HostTier>> HostTier::create(const HostTierOptions& opts) {
  if (opts.slot_bytes <= 0) return InvalidArgument("host tier: slot size must be positive");
  const int64_t n_slots = opts.capacity_bytes / opts.slot_bytes;
  if (n_slots < 1)
    return InvalidArgument("host tier: capacity " + std::to_string(opts.capacity_bytes) +
                           " bytes holds no page of " + std::to_string(opts.slot_bytes) + " bytes");
  auto tier = std::make_unique<HostTier>(Private{}, opts);
  tier->mapped_bytes_ = n_slots * opts.slot_bytes;
  void* p = MAP_FAILED;
  if (opts.file.empty()) {
    p = mmap(nullptr, (size_t)tier->mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  } else {
    STRIDE_ASSIGN_OR_RETURN(tier->fd_, open_scratch_file(opts.file, tier->mapped_bytes_));
    p = mmap(nullptr, (size_t)tier->mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, tier->fd_, 0);
  }
  if (p == MAP_FAILED)
    return ResourceExhausted("host tier: cannot map " + std::to_string(tier->mapped_bytes_) + " bytes: " + std::strerror(errno));
  tier->base_ = static_cast<uint8_t*>(p);
  tier->slots_.resize((size_t)n_slots);
  tier->free_.reserve((size_t)n_slots);
  for (int64_t s = n_slots - 1; s >= 0; --s) tier->free_.push_back(s);
  tier->stats_.slots_total = n_slots;
  return tier;
}

HostTier::~HostTier() {
  if (base_) munmap(base_, (size_t)mapped_bytes_);
  if (fd_ >= 0) ::close(fd_);  // unlinked when created: closing frees its blocks
}

Status HostTier::put(uint64_t key, std::span<const uint8_t> page, TierSpace space) {
  if ((int64_t)page.size() != opts_.slot_bytes)
    return InvalidArgument("host tier: page image of " + std::to_string(page.size()) + " bytes, slots hold " +
                           std::to_string(opts_.slot_bytes));
  erase(key, space);
  int64_t slot = -1;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    slot = lru_.front();
    ++stats_.evictions;
    free_slot(slot);
    free_.pop_back();  // free_slot pushed it
  } else {
    return ResourceExhausted("host tier: all " + std::to_string(slots_.size()) +
                             " slots are pinned or owned (" + std::to_string(n_owned_) + " owned)");
  }
  std::memcpy(slot_data(slot), page.data(), page.size());
  Slot& s = slots_[(size_t)slot];
  s.key = key;
  s.space = space;
  s.used = true;
  s.doomed = false;
  s.pins = 0;
  // Owned slots stay off the LRU list: nothing evicts them.
  if (space == TierSpace::Cache) s.lru = lru_.insert(lru_.end(), slot);
  else ++n_owned_;
  index_[(size_t)space][key] = slot;
  ++stats_.puts;
  return Status::Ok();
}

std::optional<PinnedPage> HostTier::pin(uint64_t key, TierSpace space) {
  auto& index = index_[(size_t)space];
  auto it = index.find(key);
  if (it == index.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  Slot& s = slots_[(size_t)it->second];
  if (s.pins++ == 0 && s.space == TierSpace::Cache) lru_.erase(s.lru);
  return PinnedPage(this, it->second);
}

void HostTier::unpin(int64_t slot) {
  Slot& s = slots_[(size_t)slot];
  if (--s.pins > 0) return;
  if (s.doomed) {
    s.used = false;
    s.doomed = false;
    if (s.space == TierSpace::Owned) --n_owned_;
    free_.push_back(slot);
    return;
  }
  if (s.space == TierSpace::Cache) s.lru = lru_.insert(lru_.end(), slot);  // most recently used
}

void HostTier::erase(uint64_t key, TierSpace space) {
  auto& index = index_[(size_t)space];
  auto it = index.find(key);
  if (it == index.end()) return;
  const int64_t slot = it->second;
  index.erase(it);
  Slot& s = slots_[(size_t)slot];
  if (s.pins > 0) {
    s.doomed = true;
    return;
  }
  if (s.space == TierSpace::Cache) lru_.erase(s.lru);
  else --n_owned_;
  s.used = false;
  free_.push_back(slot);
}

bool HostTier::disown(uint64_t owned_key, uint64_t cache_key) {
  auto& owned = index_[(size_t)TierSpace::Owned];
  auto it = owned.find(owned_key);
  if (it == owned.end()) return false;
  const int64_t slot = it->second;
  if (slots_[(size_t)slot].pins > 0) {
    erase(owned_key, TierSpace::Owned);
    return false;
  }
  erase(cache_key, TierSpace::Cache);
  owned.erase(it);
  --n_owned_;
  Slot& s = slots_[(size_t)slot];
  s.key = cache_key;
  s.space = TierSpace::Cache;
  s.lru = lru_.insert(lru_.end(), slot);
  index_[(size_t)TierSpace::Cache][cache_key] = slot;
  return true;
}

// Only Cache slots are evicted (put), so only they come here.
void HostTier::free_slot(int64_t slot) {
  Slot& s = slots_[(size_t)slot];
  index_[(size_t)s.space].erase(s.key);
  lru_.erase(s.lru);
  s.used = false;
  free_.push_back(slot);
}

int64_t HostTier::prefetch(std::span<const uint64_t> keys, TierSpace space) const {
  const auto& index = index_[(size_t)space];
  const int64_t page = sysconf(_SC_PAGESIZE);
  int64_t found = 0;
  for (uint64_t key : keys) {
    auto it = index.find(key);
    if (it == index.end()) continue;
    ++found;
    if (fd_ < 0) continue;  // anonymous RAM is already resident
    const uintptr_t start = (uintptr_t)slot_data(it->second);
    const uintptr_t aligned = start - start % (uintptr_t)page;
    madvise((void*)aligned, (size_t)(start - aligned + opts_.slot_bytes), MADV_WILLNEED);
  }
  return found;
}

HostTierStats HostTier::stats() const {
  HostTierStats st = stats_;
  st.slots_used = st.slots_total - (int64_t)free_.size();
  st.slots_owned = n_owned_;
  return st;
}

}  // namespace stride

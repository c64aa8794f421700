#pragma once
// Keys and values of the shared prefix-KV tier (shared_page_store.h).
//
// Key of a page: HMAC-SHA256 under the cluster's secret of (the key of the
// page before it, the KV identity, the page's token ids), chained from an
// all-zero root like the local prefix cache's chain, so a key names every
// token up to the page's end. The identity is a SHA-256 of the model file's
// digest and the KV layout (storage, page size, head geometry, every layer's
// policy): different models or configurations never share a key, and without
// the secret nobody can compute one. Stored as `prefix + hex(key)`.
//
// Value (x86-64, little-endian), 88 bytes of header then the page:
//   "STKV" | u32 version | identity[32] | key[32] | u32 n_layer | u32 page_size
//   | u64 layer_bytes | tokens: [page_size] i32
//   | payload: [n_layer, layer_bytes] (each layer's page image, then its top-k summary)
//   | SHA-256 of everything before it [32]
// decode_shared_page checks all of it, so a truncated, corrupt or foreign
// value (another model, key or prompt) is rejected and the page recomputed.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stride {

using PageDigest = std::array<uint8_t, 32>;

inline constexpr uint32_t kSharedPageVersion = 1;
inline constexpr size_t kSharedPageHeaderBytes = 88;

// SHA-256 of a description of the model and its KV layout.
PageDigest shared_kv_identity(std::string_view description);

struct SharedPageLayout {
  PageDigest identity{};
  uint32_t n_layer = 0;
  uint32_t page_size = 0;
  uint64_t layer_bytes = 0;  // one layer's page image (+ top-k summary)

  size_t payload_bytes() const { return (size_t)n_layer * (size_t)layer_bytes; }
  size_t value_bytes() const {
    return kSharedPageHeaderBytes + (size_t)page_size * 4 + payload_bytes() + 32;
  }
};

class SharedPageKeys {
 public:
  SharedPageKeys(std::string secret, PageDigest identity, std::string prefix)
      : secret_(std::move(secret)), identity_(identity), prefix_(std::move(prefix)) {}

  static PageDigest root() { return PageDigest{}; }
  // The key of the page holding `tokens` after the prefix keyed `parent`.
  //   tokens: [page_size]
  PageDigest next(const PageDigest& parent, std::span<const int32_t> tokens) const;
  std::string name(const PageDigest& key) const;  // prefix + 64 hex digits

 private:
  std::string secret_;
  PageDigest identity_;
  std::string prefix_;
};

// payload: [layout.payload_bytes()]; tokens: [layout.page_size]
std::string encode_shared_page(const SharedPageLayout& layout, const PageDigest& key,
                               std::span<const int32_t> tokens, std::span<const uint8_t> payload);

// The payload of `value` (a view into it) when it is a whole, intact value
// for this layout, key and tokens; Corrupt naming what failed otherwise.
Expected<std::span<const uint8_t>> decode_shared_page(const SharedPageLayout& layout, const PageDigest& key,
                                                      std::span<const int32_t> tokens, std::string_view value);

}  // namespace stride

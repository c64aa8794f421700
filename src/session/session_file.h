#pragma once
// The on-disk format of a saved session: the KV pages of a prompt, with what
// they depend on, so a restore into another model, policy or layout is
// refused instead of producing wrong logits.
//
// Layout (little-endian), before any encryption (session_store.h):
//   "STRIDEKV" | u32 format version (1) | u32 header bytes | header (JSON object:
//       identity, name, created, n_tokens, n_pages, image_bytes, n_page_refs)
//   i32 tokens[n_tokens]
//   {i32 layer, i32 logical page}[n_page_refs]
//   u8 images[n_page_refs, image_bytes]   each: the pool's page image (K, V,
//       int8 scales, every slot's position) then the page's top-k key summary
//   u8 sha256[32] of everything above
// Positions are those the cache holds (R-SWA's cache-relative ones included),
// so a restored page reads exactly as it was written.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kv/kv_snapshot.h"

namespace stride {

inline constexpr char kSessionMagic[] = "STRIDEKV";  // 8 bytes on disk
inline constexpr uint32_t kSessionFormatVersion = 1;

// What the pages were computed with; a restore must match all of it.
struct SessionIdentity {
  std::string model_sha256;  // of the model file as stored
  std::string model_version; // the published version name, else a sha256 prefix
  std::string architecture;
  int32_t n_vocab = 0;
  int32_t n_layer = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  int32_t page_size = 0;
  std::string kv_storage;                  // f16 | f32 | int8
  std::vector<std::string> layer_policies; // [n_layer] policy_to_string
  bool operator==(const SessionIdentity&) const = default;
};

struct SessionFile {
  std::string name;
  int64_t created = 0;  // unix seconds
  SessionIdentity identity;
  KvSnapshot kv;
};

// The file's bytes (plaintext, checksum included).
std::string encode_session(const SessionFile& s);
// The size encode_session() gives, without building it.
int64_t encoded_session_bytes(const SessionFile& s);
// Parses and checks bytes from disk: Corrupt for a bad magic, checksum,
// truncation or inconsistent sizes; InvalidArgument naming the first field
// of `expected` that differs. Never reads past `bytes`.
Expected<SessionFile> decode_session(std::string_view bytes, const SessionIdentity& expected);

}  // namespace stride

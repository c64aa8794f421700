#pragma once
// What a KV manager is built from: the model's KV shapes, the pool budget,
// each layer's attention policy, and the prefix cache and offload tier
// settings. The parts of the manager (kv_manager.h) read it; none change it.
#include <cstdint>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "kv/prefix_chains.h"
#include "kv/store/kv_storage.h"

namespace stride {

struct KvManagerConfig {
  int n_layer = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 32;             // tokens per page
  int64_t budget_bytes = 0;       // pool capacity (K+V, all layers)
  KvStorage storage = KvStorage::F16;  // f16; f32 for exact oracle comparisons; int8 to halve KV
  std::vector<PolicySpec> layer_policies;  // [n_layer]
  // Key summaries on every layer, not only top-k ones, so a sequence this
  // manager prefills can be handed to a top-k manager (export_sequence).
  bool summarize_every_layer = false;
  // Prefix cache: full pages are kept, keyed by their exact token prefix
  // (kv/prefix_chains.h: a keyed hash finds it, the tokens are compared), and
  // shared by later sequences with the same prefix.
  bool prefix_cache = true;
  // The bucket hash of that table; empty: keyed SipHash-2-4. Tests set a
  // weak one to force collisions.
  PrefixChains::HashFn prefix_hash;
  // Part of every prefix key besides the layer policies: the model version and
  // anything else the K/V depend on.
  std::string cache_salt;
  // Offload tier: cached prefix pages evicted from the pool are copied here
  // (bit for bit, with their top-k summaries) and restored on a prefix hit.
  int64_t offload_bytes = 0;  // tier capacity; 0: no tier (evicted pages are dropped)
  std::string offload_file;   // empty: anonymous RAM; else a memory-mapped scratch file
};

// Whether a manager keeps per-page key summaries: a top-k layer selects
// with them, and summarize_every_layer asks for them everywhere.
inline bool keeps_summaries(const KvManagerConfig& cfg) {
  if (cfg.summarize_every_layer) return true;
  for (const PolicySpec& p : cfg.layer_policies)
    if (p.kind == PolicyKind::TopK) return true;
  return false;
}

// Everything a page's K/V depend on besides its tokens: the cache salt, the
// page size, the storage and every layer's policy (a layer's K/V depend on
// the policies of the layers below it too). The prefix cache keys with it.
std::string kv_salt_text(const KvManagerConfig& cfg);
// kv_salt_text and the KV layout: the shared tier's identity of this model.
std::string kv_identity_text(const KvManagerConfig& cfg);

}  // namespace stride

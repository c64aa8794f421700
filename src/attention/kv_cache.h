#pragma once
// The only KV interface the model sees. It owns the paged pool, the page
// manager, each sequence's page tables and each layer's policy; it plans the
// pages every query block reads and runs the fused kernel on that plan.
//
// Step protocol (transactional, as the scheduler will need it):
//   reserve(seq, n)  -> pages for n new tokens on every layer, or
//                       ResourceExhausted with nothing changed
//   for each layer:  write(layer, seq, k, v, n); attend(layer, seq, q, n, out)
//   commit(seq, n, ids) -> length += n; full pages are registered in the
//                       prefix cache (with the token ids); pages no future
//                       query can see are released
//
// Prefix caching: add_sequence_with_prefix(prompt) starts a sequence on the
// longest cached prefix of whole pages (shared, reference-counted pages);
// its length() starts at the number of tokens reused. With an offload tier,
// evicted prefix pages are kept in host memory (or a mapped file) and come
// back into the pool when a later prompt needs them (paged_offload.cpp).
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "kv/prefix_chains.h"

namespace stride {

struct KVCacheConfig {
  int n_layer = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 32;             // tokens per page
  int64_t budget_bytes = 0;       // pool capacity (K+V, all layers)
  KvStorage storage = KvStorage::F16;  // f16; f32 for exact oracle comparisons; int8 to halve KV
  std::vector<PolicySpec> layer_policies;  // [n_layer]
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

// Per-layer parameters of one attention call.
struct AttentionParams {
  int n_head = 0;           // query heads (a multiple of n_kv_heads: GQA)
  float scale = 0.f;        // softmax scale; 0 means 1/sqrt(head_dim_k)
  float softcap = 0.f;      // 0: off; else cap * tanh(s / cap)
  // RoPE of this layer, so cache-relative R-SWA can re-rotate queries for sink keys.
  float rope_base = 10000.f;
  float rope_freq_scale = 1.f;
  int rope_dim = 0;
  bool rope_neox = false;
};

// The softmax scale actually applied (0 in AttentionParams means the default).
inline float attention_scale(const AttentionParams& p, int head_dim_k) {
  return p.scale != 0.f ? p.scale : 1.f / std::sqrt((float)head_dim_k);
}

struct KVCacheStats {
  int64_t pages_total = 0;
  int64_t pages_used = 0;
  int64_t peak_pages_used = 0;
  int64_t bytes_per_page = 0;
  // Both summed over the query blocks of every attend() call (a decode call is
  // one block): pages a block read, and pages its sequence held on that layer.
  int64_t pages_read = 0;
  int64_t pages_present = 0;
  // Wall time of attend() (planning + kernel), by the layer's policy kind:
  // [dense, window, rswa, topk, strided] (PolicyKind order).
  std::array<double, 5> attention_seconds{};
  // Of pages_read: pages holding a key inside the local window (p - window, p]
  // of a query p of the block (window, rswa, strided and top-k policies).
  int64_t window_pages_read = 0;
  // Prefix cache: registered pages (referenced or not), the unreferenced ones
  // among them (reclaimable: pages_used does not count them), pages evicted.
  int64_t pages_cached = 0;
  int64_t pages_reclaimable = 0;
  int64_t pages_evicted = 0;
  // add_sequence_with_prefix calls: prompt tokens looked up and tokens reused
  // (hit rate = hit_tokens / query_tokens), and the same counted in calls.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_queries = 0;
  int64_t prefix_hits = 0;
  // Offload tier (all 0 without one): pages copied to the tier on eviction and
  // restored from it; its slots in use and in all; needed prefix pages found
  // in the tier (hits) and in neither the pool nor the tier (misses, counted
  // over the longest candidate prefix of each lookup).
  int64_t pages_offloaded = 0;
  int64_t pages_restored = 0;
  int64_t tier_slots_used = 0;
  int64_t tier_slots_total = 0;
  int64_t tier_hits = 0;
  int64_t tier_misses = 0;
  // Top-k hot set (topk resident=N with a tier; 0 otherwise): pages moved
  // from the pool to the tier and brought back for a selection; tier slots
  // asked to prefetch (pages ranked right after the cut) and restores of a
  // page prefetched the step before; offloads refused because every tier slot
  // was owned or pinned (the page then stays in the pool: nothing is lost);
  // selected pages that could not be restored (no pool page free) and were
  // skipped; tier slots owned by top-k pages.
  int64_t topk_pages_offloaded = 0;
  int64_t topk_pages_restored = 0;
  int64_t topk_pages_prefetched = 0;
  int64_t topk_prefetch_hits = 0;
  int64_t topk_offload_refused = 0;
  int64_t topk_restore_failed = 0;
  int64_t tier_slots_owned = 0;
};

class KVCache {
 public:
  using SeqId = int32_t;

  static Expected<std::unique_ptr<KVCache>> create(const KVCacheConfig& cfg);
  virtual ~KVCache() = default;

  struct PrefixHit {
    SeqId seq = -1;
    int64_t reused_tokens = 0;  // whole pages; at most prompt.size() - 1
  };

  virtual Expected<SeqId> add_sequence() = 0;
  // A new sequence holding the longest cached prefix of `prompt` that every
  // layer can use (the pages its policy still needs for the next query).
  // At least the last prompt token is left to compute, so its logits can be
  // produced. With the prefix cache off this is add_sequence() (0 reused).
  virtual Expected<PrefixHit> add_sequence_with_prefix(std::span<const int32_t> prompt) = 0;
  virtual void remove_sequence(SeqId seq) = 0;  // frees every page it holds
  virtual int64_t length(SeqId seq) const = 0;  // tokens committed

  virtual Status reserve(SeqId seq, int n_new) = 0;
  // k: [n_new, n_kv_heads, head_dim_k], v: [n_new, n_kv_heads, head_dim_v], f32,
  // for positions [length, length + n_new); keys already carry RoPE.
  virtual void write(int layer, SeqId seq, const float* k, const float* v, int n_new) = 0;
  // q: [n_new, n_head, head_dim_k] (RoPE applied at absolute positions)
  // out: [n_new, n_head, head_dim_v]
  virtual void attend(int layer, SeqId seq, const float* q, int n_new, const AttentionParams& p,
                      float* out, ThreadPool& pool) = 0;
  // Whether attend() may run concurrently for different sequences (after
  // their write() calls), e.g. one sequence per worker of a batched step.
  // Calls for the same sequence, and every other method, stay serial.
  virtual bool concurrent_attend_safe() const { return false; }
  // ids: [n_new] token ids of the committed tokens, so full pages can be
  // registered in the prefix cache; null: this sequence caches no more pages.
  virtual void commit(SeqId seq, int n_new, const int32_t* ids) = 0;
  void commit(SeqId seq, int n_new) { commit(seq, n_new, nullptr); }

  virtual const KVCacheConfig& config() const = 0;
  virtual KVCacheStats stats() const = 0;
  // Pages the sequence holds on this layer now.
  virtual int64_t pages_held(SeqId seq, int layer) const = 0;
};

}  // namespace stride

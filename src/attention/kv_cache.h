#pragma once
// The only KV interface the model sees. It owns the paged pool, the page
// manager, each sequence's page tables and each layer's policy; it plans the
// pages every query block reads and runs the fused kernel on that plan.
//
// Step protocol (transactional, as the scheduler will need it):
//   reserve(seq, n)  -> pages for n new tokens on every layer, or
//                       ResourceExhausted with nothing changed
//   for each layer:  write(layer, seq, k, v, n); attend(layer, seq, q, n, out)
//   commit(seq, n)   -> length += n; pages no future query can see are freed
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/policy.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace stride {

struct KVCacheConfig {
  int n_layer = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 32;             // tokens per page
  int64_t budget_bytes = 0;       // pool capacity (K+V, all layers)
  bool f32_storage = false;       // f16 by default; f32 for exact oracle comparisons
  std::vector<PolicySpec> layer_policies;  // [n_layer]
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
};

class KVCache {
 public:
  using SeqId = int32_t;

  static Expected<std::unique_ptr<KVCache>> create(const KVCacheConfig& cfg);
  virtual ~KVCache() = default;

  virtual Expected<SeqId> add_sequence() = 0;
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
  virtual void commit(SeqId seq, int n_new) = 0;

  virtual const KVCacheConfig& config() const = 0;
  virtual KVCacheStats stats() const = 0;
  // Pages the sequence holds on this layer now.
  virtual int64_t pages_held(SeqId seq, int layer) const = 0;
};

}  // namespace stride

#pragma once
// The KVCache implementation: a shared paged pool, a PageManager, and per
// sequence one page table per layer (pages are per layer because windowed
// layers release pages while dense layers keep theirs).
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/kv_cache.h"
#include "kv/kv_pool.h"
#include "kv/page_manager.h"
#include "kv/page_summary.h"

namespace stride {

class PagedKVCache final : public KVCache {
 public:
  PagedKVCache(const KVCacheConfig& cfg, std::unique_ptr<KvPool> pool);

  Expected<SeqId> add_sequence() override;
  void remove_sequence(SeqId seq) override;
  int64_t length(SeqId seq) const override;
  Status reserve(SeqId seq, int n_new) override;
  void write(int layer, SeqId seq, const float* k, const float* v, int n_new) override;
  void attend(int layer, SeqId seq, const float* q, int n_new, const AttentionParams& p,
              float* out, ThreadPool& pool) override;
  void commit(SeqId seq, int n_new) override;
  const KVCacheConfig& config() const override { return cfg_; }
  KVCacheStats stats() const override;
  int64_t pages_held(SeqId seq, int layer) const override;

  // Logical page -> physical page (-1: released) of one layer; for tests and tools.
  const std::vector<int32_t>* page_table(SeqId seq, int layer) const;

 private:
  struct LayerState {
    std::vector<int32_t> table;  // [logical pages] physical id or -1
    int64_t held = 0;            // entries != -1
    int64_t scan_from = 0;       // pages before this are settled: released or kept for good
  };
  struct Sequence {
    bool active = false;
    int64_t length = 0;
    std::vector<LayerState> layers;  // [n_layer]
  };

  bool valid(SeqId seq) const;
  bool valid(SeqId seq, int layer) const;
  int64_t capacity(const Sequence& s) const;  // tokens every layer has pages for
  void release_unseen(Sequence& s, int layer);

  KVCacheConfig cfg_;
  std::unique_ptr<KvPool> pool_;
  PageManager pages_;
  std::unique_ptr<PageSummaries> summaries_;  // key min/max per page; only with a TopK layer
  std::vector<Sequence> seqs_;
  int64_t peak_used_ = 0;
  int64_t pages_read_ = 0;
  int64_t head_pages_read_ = 0;  // per-kv-head (top-k) lists: entries / n_kv_heads pages
  int64_t pages_present_ = 0;
};

}  // namespace stride

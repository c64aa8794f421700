#pragma once
// Serving metrics, rendered as Prometheus text. Names follow vLLM's with a
// `stride_` prefix (vllm:time_to_first_token_seconds -> stride_time_to_first_token_seconds):
// `promtool check metrics` rejects ':' in exported names (colons are reserved for recording rules).
// Written by the scheduler and HTTP threads, read by GET /metrics.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "attention/policy.h"

namespace stride::serving {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Appends "# HELP/# TYPE" and the _bucket/_sum/_count lines.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // [bounds + 1], last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();

  Histogram ttft;          // seconds from arrival to the first token
  Histogram itl;           // seconds between tokens of one request
  Histogram e2e;           // seconds from arrival to finish
  Histogram queue_time;    // seconds waiting before admission

  std::atomic<int64_t> prompt_tokens{0};
  std::atomic<int64_t> generation_tokens{0};
  std::atomic<int64_t> preemptions{0};
  std::atomic<int64_t> deferred_prefills{0};  // steps run without prompt chunks that did not fit
  std::atomic<int64_t> num_running{0};
  std::atomic<int64_t> num_waiting{0};
  std::atomic<int64_t> kv_pages_used{0};
  std::atomic<int64_t> kv_pages_total{0};
  std::atomic<int64_t> kv_pages_peak{0};
  std::atomic<int64_t> kv_bytes_per_page{0};
  std::atomic<int64_t> attention_pages_read{0};
  std::atomic<int64_t> attention_pages_present{0};
  // Seconds in attention by policy kind: dense, window, rswa, topk, strided.
  std::array<std::atomic<double>, kPolicyKinds> attention_seconds{};
  std::atomic<int64_t> attention_window_pages_read{0};  // of attention_pages_read: inside the local window
  std::atomic<int64_t> kv_pages_cached{0};        // registered in the prefix cache
  std::atomic<int64_t> prefix_cache_queries{0};   // prompt tokens looked up
  std::atomic<int64_t> prefix_cache_hits{0};      // prompt tokens reused
  // KV offload tier (KvStats): pages moved out on eviction and back on a hit.
  std::atomic<int64_t> kv_pages_offloaded{0};
  std::atomic<int64_t> kv_pages_restored{0};
  std::atomic<int64_t> kv_offload_slots_used{0};
  std::atomic<int64_t> kv_offload_slots_total{0};
  std::atomic<int64_t> kv_offload_hits{0};
  std::atomic<int64_t> kv_offload_misses{0};
  // Top-k hot set (resident=N): cold pages moved to the tier and back.
  std::atomic<int64_t> topk_pages_offloaded{0};
  std::atomic<int64_t> topk_pages_restored{0};
  std::atomic<int64_t> topk_pages_prefetched{0};
  std::atomic<int64_t> topk_prefetch_hits{0};
  std::atomic<int64_t> topk_offload_refused{0};
  std::atomic<int64_t> topk_restore_failed{0};
  std::atomic<int64_t> steps{0};
  std::atomic<double> step_seconds{0};
  std::atomic<int> ready{0};

  void count_finish(const std::string& reason);
  void count_http(int code);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> finished_;  // by finished_reason
  std::map<int, uint64_t> http_;              // by status code
};

// Resident set size of this process now, in bytes (VmRSS).
int64_t resident_bytes();

}  // namespace stride::serving

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
#include "kv/kv_stats.h"

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
  Histogram grammar_mask;  // seconds per constrained token: the mask, applying it, and the grammar's step
  Histogram spec_acceptance;  // speculative decoding: accepted / drafted tokens of each verification step

  std::atomic<int64_t> prompt_tokens{0};
  std::atomic<int64_t> generation_tokens{0};
  std::atomic<int64_t> preemptions{0};
  std::atomic<int64_t> deferred_prefills{0};  // steps run without prompt chunks that did not fit
  std::atomic<int64_t> split_prefills{0};     // lone prompt chunks halved to fit
  std::atomic<int64_t> session_pages_restored{0};  // KV pages loaded from saved sessions
  std::atomic<int64_t> num_running{0};
  std::atomic<int64_t> num_waiting{0};
  std::atomic<int64_t> spec_draft_tokens{0};     // speculative decoding: tokens proposed
  std::atomic<int64_t> spec_accepted_tokens{0};  // of which the target kept
  std::atomic<int64_t> spec_verify_steps{0};     // sequence steps that verified drafts
  std::atomic<int64_t> steps{0};
  // A shard set (`stride serve --shard-world`): requests sent to it, those
  // that failed there, whether its group is connected, and its generation.
  std::atomic<int64_t> sharded_requests{0};
  std::atomic<int64_t> sharded_failures{0};
  std::atomic<int64_t> shard_set_connected{0};
  std::atomic<int64_t> shard_set_generation{-1};
  std::atomic<double> step_seconds{0};
  std::atomic<int> ready{0};

  // The KV manager's counters (kv/kv_stats.h), published whole: /metrics
  // renders every metric of kv_metrics.h from the latest snapshot.
  void set_kv(const KvStats& st);
  KvStats kv() const;

  void count_finish(const std::string& reason);
  void count_http(int code);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> finished_;  // by finished_reason
  std::map<int, uint64_t> http_;              // by status code
  KvStats kv_;
};

// Resident set size of this process now, in bytes (VmRSS).
int64_t resident_bytes();

}  // namespace stride::serving

#include "serving/metrics.h"

#include "core/cpu_features.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/process_memory.h"
#include "serving/kv_metrics.h"

namespace stride::serving {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void scalar(std::string& out, const std::string& name, const char* type, const std::string& help,
            double v) {
  header(out, name, type, help);
  out += name + " " + num(v) + "\n";
}

const std::vector<double> kLatencyBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
                                            0.5,   0.75,  1.0,  2.5,  5.0,  7.5,  10.0, 20.0, 40.0,
                                            80.0,  160.0};

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  header(out, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + num(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft(kLatencyBounds),
      itl(kLatencyBounds),
      e2e(kLatencyBounds),
      queue_time(kLatencyBounds),
      grammar_mask({1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0}),
      spec_acceptance({0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0}) {}

void Metrics::count_finish(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[reason];
}

void Metrics::count_http(int code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_[code];
}

int64_t resident_bytes() { return process_status_bytes("VmRSS"); }

void Metrics::set_kv(const KvStats& st) {
  std::lock_guard<std::mutex> lock(mu_);
  kv_ = st;
}

KvStats Metrics::kv() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kv_;
}

std::string Metrics::render() const {
  std::string out;
  out.reserve(8192);
  out += "# HELP stride_cpu_path_info The kernel path this process runs (cpu_path: avx2 or avx512).\n"
         "# TYPE stride_cpu_path_info gauge\n"
         "stride_cpu_path_info{cpu_path=\"" + std::string(cpu_path_name(active_cpu_path())) + "\"} 1\n";
  ttft.render(out, "stride_time_to_first_token_seconds", "Time to first token in seconds.");
  itl.render(out, "stride_inter_token_latency_seconds", "Latency between consecutive tokens in seconds.");
  e2e.render(out, "stride_e2e_request_latency_seconds", "End-to-end request latency in seconds.");
  queue_time.render(out, "stride_request_queue_time_seconds", "Time spent waiting before admission in seconds.");
  grammar_mask.render(out, "stride_grammar_mask_seconds",
                      "Seconds per constrained token spent on the grammar (token mask and state update).");
  spec_acceptance.render(out, "stride_spec_decode_acceptance_rate",
                         "Speculative decoding: share of a verification step's draft tokens the target accepted.");
  scalar(out, "stride_spec_decode_num_draft_tokens_total", "counter", "Speculative decoding: draft tokens proposed.",
         (double)spec_draft_tokens);
  scalar(out, "stride_spec_decode_num_accepted_tokens_total", "counter",
         "Speculative decoding: draft tokens the target accepted.", (double)spec_accepted_tokens);
  scalar(out, "stride_spec_decode_num_verify_steps_total", "counter",
         "Speculative decoding: sequence steps that verified drafts.", (double)spec_verify_steps);
  scalar(out, "stride_num_requests_running", "gauge", "Sequences in the running batch.", (double)num_running);
  scalar(out, "stride_num_requests_waiting", "gauge", "Requests waiting for admission.", (double)num_waiting);
  scalar(out, "stride_prompt_tokens_total", "counter", "Prompt tokens processed.", (double)prompt_tokens);
  scalar(out, "stride_generation_tokens_total", "counter", "Tokens generated.", (double)generation_tokens);
  scalar(out, "stride_num_preemptions_total", "counter", "Sequences preempted for recompute.", (double)preemptions);
  scalar(out, "stride_deferred_prefill_steps_total", "counter",
         "Steps run without prompt chunks that did not fit in the KV pool (they ran later).", (double)deferred_prefills);
  scalar(out, "stride_split_prefill_steps_total", "counter",
         "Prompt chunks halved because a lone chunk did not fit in the KV pool.", (double)split_prefills);
  scalar(out, "stride_session_pages_restored_total", "counter",
         "KV pages loaded from saved sessions into the prefix cache.", (double)session_pages_restored);
  scalar(out, "stride_engine_steps_total", "counter", "Scheduler steps run.", (double)steps);
  scalar(out, "stride_sharded_requests_total", "counter", "Requests sent to the shard set.", (double)sharded_requests);
  scalar(out, "stride_sharded_request_failures_total", "counter",
         "Requests that failed in the shard set (a rank gone or timed out, or refused there).",
         (double)sharded_failures);
  scalar(out, "stride_shard_set_connected", "gauge", "1 while the shard set's workers are connected.",
         (double)shard_set_connected);
  scalar(out, "stride_shard_set_generation", "gauge", "The shard set's generation (one per start of its group).",
         (double)shard_set_generation);
  scalar(out, "stride_engine_step_seconds_total", "counter", "Seconds spent in forward steps.", step_seconds.load());
  {
    std::lock_guard<std::mutex> lock(mu_);
    header(out, "stride_request_success_total", "counter", "Finished requests by finish reason.");
    for (const auto& [reason, n] : finished_) {
      out += "stride_request_success_total{finished_reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
    }
    header(out, "stride_http_requests_total", "counter", "HTTP responses by status code.");
    for (const auto& [code, n] : http_) {
      out += "stride_http_requests_total{code=\"" + std::to_string(code) + "\"} " + std::to_string(n) + "\n";
    }
  }
  const KvStats ks = kv();
  for_each_kv_metric(ks, [&](const char* name, const char* kind, const char* help, int64_t value) {
    scalar(out, name, kind, help, (double)value);
  });
  scalar(out, "stride_kv_cache_usage_perc", "gauge", "Fraction of KV pages in use (1 = full).",
         ks.pages_total > 0 ? (double)ks.pages_used / (double)ks.pages_total : 0.0);
  out += "# HELP stride_attention_seconds_total Time spent in attention (selection and kernel), by layer policy.\n"
         "# TYPE stride_attention_seconds_total counter\n";
  for (size_t k = 0; k < ks.attention_seconds.size(); ++k) {
    char line[128];
    std::snprintf(line, sizeof line, "stride_attention_seconds_total{policy=\"%s\"} %.6f\n",
                  policy_kind_name((PolicyKind)k), ks.attention_seconds[k]);
    out += line;
  }
  out += "# HELP stride_attention_read_share Share of the KV pages held that attention read, by layer policy "
         "(pages read / pages present; top-k's achieved sparsity is 1 minus it).\n"
         "# TYPE stride_attention_read_share gauge\n";
  for (size_t k = 0; k < ks.pages_read_by_policy.size(); ++k) {
    const double present = ks.pages_present_by_policy[k];
    char line[128];
    std::snprintf(line, sizeof line, "stride_attention_read_share{policy=\"%s\"} %.6f\n",
                  policy_kind_name((PolicyKind)k), present > 0 ? ks.pages_read_by_policy[k] / present : 0.0);
    out += line;
  }
  // Window hit rate: the share of page reads served by the local window
  // rather than sinks, globals or top-k selection.
  scalar(out, "stride_attention_window_hit_ratio", "gauge",
         "Share of attention page reads that came from the local window (window pages read / pages read).",
         ks.pages_read > 0 ? (double)ks.window_pages_read / (double)ks.pages_read : 0.0);
  scalar(out, "stride_process_resident_memory_bytes", "gauge", "Resident set size of the process.",
         (double)resident_bytes());
  scalar(out, "stride_ready", "gauge", "1 once the model is loaded and warmed up.", (double)ready.load());
  return out;
}

}  // namespace stride::serving

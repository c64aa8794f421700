#pragma once
// Server configuration: a YAML file, overridden by STRIDE_<KEY> environment
// variables, overridden in turn by CLI flags (applied by the caller).
// Unknown keys and bad values are errors at start-up.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "loader/rope_override.h"

namespace stride::serving {

struct ServeConfig {
  // Model and engine.
  std::string model;
  std::string model_sha256;           // when set, the file is verified before loading
  std::vector<std::string> served_model_names;  // names clients pass as "model"; the first is reported; empty: the file name
  int64_t max_context_length = 131072;
  double sparsity = 0.9;              // a topk `attention` that names neither sparsity= nor mass= gets sparsity=this
  bool cache_reuse = true;            // prefix cache: reuse KV pages of shared prompt prefixes
  std::string attention = "dense";    // policy of global layers
  std::vector<std::string> layer_attention;  // "A-B=POLICY"
  bool allow_request_attention = false;      // may a request name a policy (must equal the engine's)
  int64_t reference_window = 0;       // accepted; reserved
  std::string cache_compression = "none";  // int8: int8 KV pages (overrides kv_type)
  // Cached prefix pages are evicted least recently used first when the pool
  // needs room ("lru"; "none" and "policy" are older names for the same).
  std::string cache_eviction_policy = "lru";
  std::string kv_budget = "512M";     // KV pool size (the memory budget)
  std::string kv_offload_bytes = "0"; // host tier for evicted prefix pages (K, M, G suffixes); 0: none
  std::string kv_offload_file;        // empty: the tier is RAM; else a memory-mapped scratch file
  // Shared prefix-KV tier (docs/serving.md, "Shared KV tier"): replicas
  // publish full prefix pages to Redis and read each other's.
  std::string kv_shared_tier;         // redis://[:password@]host:port[/db]; empty: off
  std::string kv_shared_tier_secret;  // HMAC key of the page keys, the same on every replica (env STRIDE_KV_SHARED_TIER_SECRET)
  std::string kv_shared_tier_prefix = "stride:kv:";  // Redis key prefix
  int64_t kv_shared_tier_ttl_s = 3600;       // 0: no TTL (Redis's maxmemory policy evicts)
  int kv_shared_tier_timeout_ms = 50;        // a lookup's socket reads and writes
  std::string kv_shared_tier_queue = "64M";  // pages waiting to be published; more are dropped
  std::string kv_type = "f16";        // f16 | f32 | int8
  std::string head_type = "file";     // file | q4_k | q5_k | q4_0 | q5_0: the output head requantized at load
  int threads = 0;
  int page_size = 32;
  int prefill_chunk = 256;            // tokens per engine step (decode + prefill)
  std::string chat_template_file;     // Jinja chat template replacing the GGUF's (empty: the GGUF's)
  RopeOverride rope;                  // rope_scaling, rope_scale, yarn_orig_ctx ...: replace the file's RoPE
  // Speculative decoding (docs/serving.md): the default for requests that do not choose.
  std::string speculative = "off";    // off | prompt-lookup | draft
  std::string draft_model;            // GGUF of the same vocabulary; needed by "draft"
  int draft_max = 8;                  // tokens drafted per step at most
  int draft_min = 1;                  // fewer found: a plain decode step
  int lookup_ngram_min = 1;           // prompt lookup: suffix lengths matched, longest first
  int lookup_ngram_max = 3;

  // Scheduling and limits.
  int max_batch = 8;
  int max_queue = 64;
  double request_timeout_s = 600;
  int64_t max_prompt_tokens = 0;      // 0: max_context_length
  int max_tokens_cap = 4096;
  int64_t max_body_bytes = 1 << 20;
  // Unknown request fields: 400 as OpenAI answers (true), or logged and
  // ignored for clients that send other servers' extensions (false; --lenient).
  bool strict_requests = true;

  // Embeddings (POST /v1/embeddings).
  std::string embedding_pooling = "last";  // decoder models: last | mean (encoders use their own pooling)
  bool embedding_normalize = true;         // decoder models: L2-normalize the pooled vector
  int max_embedding_inputs = 256;          // inputs in one request
  int64_t max_embedding_tokens = 65536;    // tokens of all inputs of one request

  // Network and security.
  std::string host = "127.0.0.1";
  int port = 8080;
  int io_threads = 2;                 // threads doing network I/O (and relaying the scheduler's events)
  int max_connections = 1024;         // open connections in total; beyond it the oldest idle one is closed
  int max_connections_per_ip = 256;   // per client address; beyond it that address's oldest idle one is closed
  double header_timeout_s = 30;       // to receive a request's headers
  double body_timeout_s = 60;         // to receive its body
  double idle_timeout_s = 60;         // keep-alive: between requests
  double write_timeout_s = 30;        // to write one response part; a client that stops reading is cut off
  int keepalive_max_requests = 1000;  // requests per connection before it is closed
  int max_requests_per_key = 0;       // running + queued generation requests per API key (client IP without keys); 0 = off
  bool metrics_require_key = false;   // /metrics needs an API key (its cache counters reveal other clients' hits)
  std::vector<std::string> api_keys;  // bearer tokens (prefer api_keys_file or STRIDE_API_KEYS)
  std::string api_keys_file;          // one key per line
  std::vector<std::string> admin_keys; // bearer tokens for POST /admin/model; empty: admin API off
  std::vector<std::string> allowlist; // CIDRs; empty: everyone
  double rate_limit_rpm = 0;          // requests per minute per API key (per client IP without keys); 0: off
  std::string audit_log;              // JSON-lines path; empty: off
  bool audit_log_prompts = false;
  std::string log_level = "INFO";
  bool web_ui = true;                 // the chat playground and dashboard at /
  int grpc_port = -1;                 // the gRPC service (proto/stride/v1/inference.proto); -1: off, 0: any free port

  // Model versions, weights at rest, TLS.
  std::string model_dir;              // <model_dir>/<version>/{*.gguf, SHA256}; exclusive with `model`
  std::string model_version;          // the version served from model_dir (env STRIDE_MODEL_VERSION)
  std::string model_key;              // 64 hex digits for encrypted model files (prefer model_key_file)
  std::string model_key_file;         // file holding the key (64 hex digits or 32 raw bytes)
  std::string tls_cert_file;          // PEM certificate chain; with tls_key_file the server speaks HTTPS only
  std::string tls_key_file;           // PEM private key

  // Saved sessions (POST /v1/sessions/{name}, "session" in a request): off when empty.
  std::string session_dir;
  std::string session_max_bytes = "2G";         // one session file (K, M, G suffixes)
  std::string session_max_total_bytes = "16G";  // every file in session_dir
};

// Loads `path` (may be empty: defaults only), then applies the environment.
Expected<ServeConfig> load_config(const std::string& path, char** envp);

// Applies one key=value (from the environment or a flag); errors name the key.
Status set_config_value(ServeConfig& c, const std::string& key, const std::string& value);

// Cross-field checks and api_keys_file loading; call after every override.
Status finalize_config(ServeConfig& c);

}  // namespace stride::serving

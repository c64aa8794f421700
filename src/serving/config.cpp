#include "serving/config.h"

#include "redis/redis_url.h"

#include "loader/model_versions.h"
#include "loader/rope_override_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <sstream>

namespace stride::serving {

namespace {

using Setter = std::function<Status(ServeConfig&, const std::string&)>;

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

template <typename T>
Status parse_num(const std::string& key, const std::string& v, T& out, T lo, T hi) {
  std::istringstream ss(v);
  T x{};
  ss >> x;
  if (ss.fail() || !ss.eof() || x < lo || x > hi) {
    return InvalidArgument("config: " + key + " = '" + v + "' is not a number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  out = x;
  return Status::Ok();
}

Status parse_bool(const std::string& key, const std::string& v, bool& out) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), ::tolower);
  if (l == "true" || l == "1" || l == "yes") out = true;
  else if (l == "false" || l == "0" || l == "no") out = false;
  else return InvalidArgument("config: " + key + " = '" + v + "' is not a boolean");
  return Status::Ok();
}

Status one_of(const std::string& key, const std::string& v, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (v == a) return Status::Ok();
  }
  std::string list;
  for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
  return InvalidArgument("config: " + key + " = '" + v + "' must be one of: " + list);
}

#define STR(field) [](ServeConfig& c, const std::string& v) { c.field = v; return Status::Ok(); }
#define LIST(field) [](ServeConfig& c, const std::string& v) { c.field = split_list(v); return Status::Ok(); }
#define BOOL(key, field) [](ServeConfig& c, const std::string& v) { return parse_bool(key, v, c.field); }
#define NUM(key, field, T, lo, hi) \
  [](ServeConfig& c, const std::string& v) { return parse_num<T>(key, v, c.field, lo, hi); }
#define ROPE(key) [](ServeConfig& c, const std::string& v) { return set_rope_override_value(c.rope, key, v); }

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> m = {
      {"model", STR(model)},
      {"model_sha256", STR(model_sha256)},
      {"served_model_name", LIST(served_model_names)},
      {"max_context_length", NUM("max_context_length", max_context_length, int64_t, 16, 1 << 24)},
      {"sparsity", NUM("sparsity", sparsity, double, 0.0, 0.999)},
      {"cache_reuse", BOOL("cache_reuse", cache_reuse)},
      {"attention", STR(attention)},
      {"layer_attention", LIST(layer_attention)},
      {"allow_request_attention", BOOL("allow_request_attention", allow_request_attention)},
      {"reference_window", NUM("reference_window", reference_window, int64_t, 0, 1 << 24)},
      {"cache_compression",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("cache_compression", v, {"none", "int8"}));
         c.cache_compression = v;
         return Status::Ok();
       }},
      {"cache_eviction_policy",
       [](ServeConfig& c, const std::string& v) {
         std::string l = v;
         std::transform(l.begin(), l.end(), l.begin(), ::tolower);
         STRIDE_RETURN_IF_ERROR(one_of("cache_eviction_policy", l, {"lru", "none", "policy"}));
         c.cache_eviction_policy = l;
         return Status::Ok();
       }},
      {"kv_budget", STR(kv_budget)},
      {"kv_offload_bytes", STR(kv_offload_bytes)},
      {"kv_offload_file", STR(kv_offload_file)},
      {"kv_shared_tier", STR(kv_shared_tier)},
      {"kv_shared_tier_secret", STR(kv_shared_tier_secret)},
      {"kv_shared_tier_prefix", STR(kv_shared_tier_prefix)},
      {"kv_shared_tier_ttl_s", NUM("kv_shared_tier_ttl_s", kv_shared_tier_ttl_s, int64_t, 0, int64_t(1) << 31)},
      {"kv_shared_tier_timeout_ms", NUM("kv_shared_tier_timeout_ms", kv_shared_tier_timeout_ms, int, 1, 60000)},
      {"kv_shared_tier_queue", STR(kv_shared_tier_queue)},
      {"kv_type",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("kv_type", v, {"f16", "f32", "int8"}));
         c.kv_type = v;
         return Status::Ok();
       }},
      {"head_type",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("head_type", v, {"file", "q4_k", "q5_k", "q4_0", "q5_0"}));
         c.head_type = v;
         return Status::Ok();
       }},
      {"threads", NUM("threads", threads, int, 0, 1024)},
      {"rope_scaling", ROPE("rope_scaling")},
      {"rope_scale", ROPE("rope_scale")},
      {"rope_freq_scale", ROPE("rope_freq_scale")},
      {"rope_freq_base", ROPE("rope_freq_base")},
      {"yarn_orig_ctx", ROPE("yarn_orig_ctx")},
      {"yarn_attn_factor", ROPE("yarn_attn_factor")},
      {"yarn_beta_fast", ROPE("yarn_beta_fast")},
      {"yarn_beta_slow", ROPE("yarn_beta_slow")},
      {"page_size", NUM("page_size", page_size, int, 1, 4096)},
      {"prefill_chunk", NUM("prefill_chunk", prefill_chunk, int, 1, 65536)},
      {"max_batch", NUM("max_batch", max_batch, int, 1, 1024)},
      {"speculative",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("speculative", v, {"off", "prompt-lookup", "draft"}));
         c.speculative = v;
         return Status::Ok();
       }},
      {"draft_model", STR(draft_model)},
      {"chat_template_file", STR(chat_template_file)},
      {"draft_max", NUM("draft_max", draft_max, int, 1, 64)},
      {"draft_min", NUM("draft_min", draft_min, int, 1, 64)},
      {"lookup_ngram_min", NUM("lookup_ngram_min", lookup_ngram_min, int, 1, 16)},
      {"lookup_ngram_max", NUM("lookup_ngram_max", lookup_ngram_max, int, 1, 16)},
      {"max_queue", NUM("max_queue", max_queue, int, 0, 1 << 20)},
      {"request_timeout_s", NUM("request_timeout_s", request_timeout_s, double, 0.001, 1e7)},
      {"max_prompt_tokens", NUM("max_prompt_tokens", max_prompt_tokens, int64_t, 0, 1 << 24)},
      {"strict_requests", BOOL("strict_requests", strict_requests)},
      {"max_tokens_cap", NUM("max_tokens_cap", max_tokens_cap, int, 1, 1 << 24)},
      {"max_body_bytes", NUM("max_body_bytes", max_body_bytes, int64_t, 64, int64_t(1) << 32)},
      {"embedding_pooling",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("embedding_pooling", v, {"last", "mean"}));
         c.embedding_pooling = v;
         return Status::Ok();
       }},
      {"embedding_normalize", BOOL("embedding_normalize", embedding_normalize)},
      {"max_embedding_inputs", NUM("max_embedding_inputs", max_embedding_inputs, int, 1, 1 << 16)},
      {"max_embedding_tokens", NUM("max_embedding_tokens", max_embedding_tokens, int64_t, 1, int64_t(1) << 30)},
      {"host", STR(host)},
      {"port", NUM("port", port, int, 0, 65535)},
      {"io_threads", NUM("io_threads", io_threads, int, 1, 256)},
      {"max_connections", NUM("max_connections", max_connections, int, 1, 1 << 20)},
      {"max_connections_per_ip", NUM("max_connections_per_ip", max_connections_per_ip, int, 1, 1 << 20)},
      {"header_timeout_s", NUM("header_timeout_s", header_timeout_s, double, 0.01, 1e6)},
      {"body_timeout_s", NUM("body_timeout_s", body_timeout_s, double, 0.01, 1e6)},
      {"idle_timeout_s", NUM("idle_timeout_s", idle_timeout_s, double, 0.01, 1e6)},
      {"write_timeout_s", NUM("write_timeout_s", write_timeout_s, double, 0.01, 1e6)},
      {"keepalive_max_requests", NUM("keepalive_max_requests", keepalive_max_requests, int, 1, 1 << 30)},
      {"max_requests_per_key", NUM("max_requests_per_key", max_requests_per_key, int, 0, 1 << 20)},
      {"metrics_require_key", BOOL("metrics_require_key", metrics_require_key)},
      {"api_keys", LIST(api_keys)},
      {"api_keys_file", STR(api_keys_file)},
      {"admin_keys", LIST(admin_keys)},
      {"allowlist", LIST(allowlist)},
      {"rate_limit_rpm", NUM("rate_limit_rpm", rate_limit_rpm, double, 0.0, 1e9)},
      {"audit_log", STR(audit_log)},
      {"audit_log_prompts", BOOL("audit_log_prompts", audit_log_prompts)},
      {"web_ui", BOOL("web_ui", web_ui)},
      {"grpc_port", NUM("grpc_port", grpc_port, int, -1, 65535)},
      {"log_level",
       [](ServeConfig& c, const std::string& v) {
         STRIDE_RETURN_IF_ERROR(one_of("log_level", v, {"DEBUG", "INFO", "WARNING", "ERROR"}));
         c.log_level = v;
         return Status::Ok();
       }},
      // Model versions, weights at rest, TLS.
      {"model_dir", STR(model_dir)},
      {"model_version", STR(model_version)},
      {"model_key", STR(model_key)},
      {"model_key_file", STR(model_key_file)},
      {"tls_cert_file", STR(tls_cert_file)},
      {"tls_key_file", STR(tls_key_file)},
      // Saved sessions.
      {"session_dir", STR(session_dir)},
      {"session_max_bytes", STR(session_max_bytes)},
      {"session_max_total_bytes", STR(session_max_total_bytes)},
  };
  return m;
}

// A YAML node as the string a setter takes (sequences joined by commas).
Expected<std::string> node_text(const std::string& key, const YAML::Node& n) {
  if (n.IsScalar()) return n.as<std::string>();
  if (n.IsNull()) return std::string();
  if (n.IsSequence()) {
    std::string out;
    for (const auto& item : n) {
      if (!item.IsScalar()) return InvalidArgument("config: " + key + " must be a list of strings");
      const std::string s = item.as<std::string>();
      if (s.find(',') != std::string::npos) return InvalidArgument("config: " + key + " items may not contain ','");
      out += (out.empty() ? "" : ",") + s;
    }
    return out;
  }
  return InvalidArgument("config: " + key + " must be a scalar or a list");
}

}  // namespace

Status set_config_value(ServeConfig& c, const std::string& key, const std::string& value) {
  auto it = setters().find(key);
  if (it == setters().end()) return InvalidArgument("config: unknown key '" + key + "'");
  return it->second(c, value);
}

Expected<ServeConfig> load_config(const std::string& path, char** envp) {
  ServeConfig c;
  if (!path.empty()) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      return InvalidArgument("config: cannot read " + path + ": " + e.what());
    }
    if (root && !root.IsNull()) {
      if (!root.IsMap()) return InvalidArgument("config: " + path + " must be a mapping of key: value");
      for (const auto& kv : root) {
        const std::string key = kv.first.as<std::string>();
        STRIDE_ASSIGN_OR_RETURN(std::string text, node_text(key, kv.second));
        STRIDE_RETURN_IF_ERROR(set_config_value(c, key, text));
      }
    }
  }
  // STRIDE_<KEY> for every known key (STRIDE_API_KEYS, STRIDE_MAX_BATCH, ...).
  for (char** e = envp; e && *e; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (entry.rfind("STRIDE_", 0) != 0 || eq == std::string::npos) continue;
    std::string key = entry.substr(7, eq - 7);
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    if (setters().count(key) == 0) continue;  // other STRIDE_ variables belong to other tools
    STRIDE_RETURN_IF_ERROR(set_config_value(c, key, entry.substr(eq + 1)));
  }
  return c;
}

Status finalize_config(ServeConfig& c) {
  // A restored session is a prefix-cache hit.
  if (!c.session_dir.empty() && !c.cache_reuse)
    return InvalidArgument("config: session_dir needs cache_reuse: true (sessions are restored through the prefix cache)");
  if (!c.api_keys_file.empty()) {
    std::ifstream f(c.api_keys_file);
    if (!f) return NotFound("config: cannot read api_keys_file " + c.api_keys_file);
    std::string line;
    while (std::getline(f, line)) {
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty() && line[0] != '#') c.api_keys.push_back(line);
    }
  }
  if (c.max_prompt_tokens <= 0 || c.max_prompt_tokens > c.max_context_length) {
    c.max_prompt_tokens = c.max_context_length;
  }
  if (!c.model_dir.empty() && !c.model.empty()) {
    return InvalidArgument("config: give either model (a file) or model_dir + model_version, not both");
  }
  if (!c.model_dir.empty() && c.model_version.empty()) c.model_version = kActiveVersionName;
  if (c.model_dir.empty() && !c.model_version.empty()) {
    return InvalidArgument("config: model_version needs model_dir");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return InvalidArgument("config: TLS needs both tls_cert_file and tls_key_file");
  }
  for (const std::string& name : c.served_model_names) {
    if (name.size() > 256) return InvalidArgument("config: served_model_name entries are at most 256 bytes");
  }
  if (c.speculative == "draft" && c.draft_model.empty())
    return InvalidArgument("config: speculative: draft needs draft_model (--draft-model)");
  if (c.draft_min > c.draft_max) return InvalidArgument("config: draft_min exceeds draft_max");
  if (c.lookup_ngram_min > c.lookup_ngram_max)
    return InvalidArgument("config: lookup_ngram_min exceeds lookup_ngram_max");
  if (!c.kv_shared_tier.empty()) {
    STRIDE_RETURN_IF_ERROR(parse_redis_url(c.kv_shared_tier).status());
    if (c.kv_shared_tier_secret.size() < 16)
      return InvalidArgument("config: kv_shared_tier needs kv_shared_tier_secret (at least 16 characters, the same "
                             "on every replica; env STRIDE_KV_SHARED_TIER_SECRET)");
    if (!c.cache_reuse) return InvalidArgument("config: kv_shared_tier needs cache_reuse");
  }
  if (c.max_batch > c.prefill_chunk) {
    return InvalidArgument("config: max_batch (" + std::to_string(c.max_batch) + ") exceeds prefill_chunk (" +
                           std::to_string(c.prefill_chunk) + "): every running sequence needs a token per step");
  }
  return Status::Ok();
}

}  // namespace stride::serving

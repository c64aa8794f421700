#include "cli/serve_config.h"

#include "cli/rope_options.h"
#include "loader/encrypted_file.h"
#include "loader/model_versions.h"

extern char** environ;

namespace stride::cli {

void add_serve_options(CLI::App& cmd, ServeArgs& a) {
  cmd.add_option("--config", a.config, "YAML config file (see configs/stride.example.yaml)");
  auto flag = [&](const char* name, const char* key, std::string& target, const char* help) {
    cmd.add_option(name, target, help);
    a.flags.push_back({key, &target});
  };
  flag("--model,-m", "model", a.model, "GGUF file, or a BERT encoder folder (embeddings only)");
  cmd.add_option("--served-model-name", a.served_model_names,
                 "names clients pass as \"model\" (the first is reported; default: the file name)")
      ->delimiter(',');
  flag("--host", "host", a.host, "bind address (default 127.0.0.1)");
  flag("--grpc-port", "grpc_port", a.grpc_port, "serve gRPC (stride.v1.Inference) on this port too (0 = any free port)");
  flag("--port", "port", a.port, "port (default 8080; 0 = any free port)");
  flag("--max-batch", "max_batch", a.max_batch, "sequences decoded together (default 8)");
  flag("--max-queue", "max_queue", a.max_queue, "waiting requests before 429 (default 64)");
  flag("--kv-budget", "kv_budget", a.kv_budget, "KV pool size, e.g. 512M");
  flag("--kv-shared-tier", "kv_shared_tier", a.kv_shared_tier,
       "share prefix KV pages with other replicas through Redis: redis://[:password@]host:port[/db] "
       "(needs kv_shared_tier_secret)");
  flag("--threads", "threads", a.threads, "compute threads (0 = all cores)");
  flag("--head-type", "head_type", a.head_type,
       "output head type: file | q4_k | q5_k | q4_0 | q5_0 (requantized at load when smaller; default file)");
  flag("--attention,-a", "attention", a.attention, "policy for global layers");
  flag("--log-level", "log_level", a.log_level, "DEBUG | INFO | WARNING | ERROR");
  flag("--api-keys-file", "api_keys_file", a.api_keys_file, "file with one API key per line");
  flag("--ctx-size,-c", "max_context_length", a.max_context_length, "max tokens per sequence");
  flag("--request-timeout", "request_timeout_s", a.request_timeout_s, "seconds before a request ends with 'timeout'");
  flag("--audit-log", "audit_log", a.audit_log, "JSON-lines audit log path");
  flag("--model-dir", "model_dir", a.model_dir, "directory of published versions (see stride model publish)");
  flag("--model-version", "model_version", a.model_version,
       "version of --model-dir to serve (default 'active': the one <model-dir>/ACTIVE records)");
  flag("--model-key-file", "model_key_file", a.model_key_file, "AES-256 key for encrypted model files");
  flag("--tls-cert", "tls_cert_file", a.tls_cert, "PEM certificate chain: serve HTTPS only");
  flag("--tls-key", "tls_key_file", a.tls_key, "PEM private key for --tls-cert");
  flag("--session-dir", "session_dir", a.session_dir,
       "directory of saved sessions (POST /v1/sessions/NAME, \"session\" in requests); off when unset");
  flag("--embedding-pooling", "embedding_pooling", a.embedding_pooling,
       "/v1/embeddings of a decoder model: last | mean (default last)");
  flag("--chat-template-file", "chat_template_file", a.chat_template_file,
       "Jinja chat template used instead of the GGUF's (its tool-call syntax too)");
  flag("--speculative", "speculative", a.speculative,
       "speculative decoding for requests that do not choose: off | prompt-lookup | draft (default off)");
  flag("--draft-model", "draft_model", a.draft_model, "draft model (GGUF, same vocabulary) for --speculative draft");
  flag("--draft-max", "draft_max", a.draft_max, "tokens drafted per step at most (default 8)");
  flag("--draft-min", "draft_min", a.draft_min, "fewer drafts found: decode plainly (default 1)");
  flag("--lookup-ngram-min", "lookup_ngram_min", a.lookup_ngram_min, "prompt lookup: shortest n-gram (default 1)");
  flag("--lookup-ngram-max", "lookup_ngram_max", a.lookup_ngram_max, "prompt lookup: longest n-gram (default 3)");
  cmd.add_flag("--lenient", a.lenient,
               "ignore (and log) request fields OpenAI's API does not define, instead of answering 400 "
               "(config strict_requests: false)");
  add_rope_flags(&cmd, a.rope, a.flags);
}

Expected<serving::ServeConfig> read_config(const ServeArgs& a) {
  STRIDE_ASSIGN_OR_RETURN(serving::ServeConfig cfg, serving::load_config(a.config, environ));
  for (const auto& [key, value] : a.flags) {
    if (value->empty()) continue;
    Status st = serving::set_config_value(cfg, key, *value);
    if (!st.ok()) return Status(st.code(), st.message() + " (from --" + key + ")");
  }
  if (a.lenient) STRIDE_RETURN_IF_ERROR(serving::set_config_value(cfg, "strict_requests", "false"));
  if (!a.served_model_names.empty()) {
    std::string joined;
    for (const std::string& n : a.served_model_names) joined += (joined.empty() ? "" : ",") + n;
    STRIDE_RETURN_IF_ERROR(serving::set_config_value(cfg, "served_model_name", joined));
  }
  STRIDE_RETURN_IF_ERROR(serving::finalize_config(cfg));
  return cfg;
}

Expected<server::ModelRef> configured_model(const serving::ServeConfig& cfg) {
  if (!cfg.model_dir.empty()) return server::model_ref_for_version(cfg.model_dir, cfg.model_version);
  if (cfg.model.empty()) {
    return InvalidArgument("no model: give --model, or model_dir + model_version (config, --model-dir/--model-version "
                           "or STRIDE_MODEL_DIR/STRIDE_MODEL_VERSION)");
  }
  return server::ModelRef{cfg.model, cfg.model_sha256, "", ""};
}

Status install_model_key(const serving::ServeConfig& cfg) {
  if (!cfg.model_key.empty()) {
    auto key = parse_model_key_hex(cfg.model_key);
    if (!key) return InvalidArgument("config: model_key: " + key.status().message());
    set_model_key(*key);
  } else if (!cfg.model_key_file.empty()) {
    auto key = read_model_key_file(cfg.model_key_file);
    if (!key) return Status(key.status().code(), "config: model_key_file: " + key.status().message());
    set_model_key(*key);
  }
  return Status::Ok();
}

}  // namespace stride::cli

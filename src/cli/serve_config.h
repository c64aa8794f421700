#pragma once
// `stride serve`'s configuration: its command-line flags, the config they
// layer over (config file < environment < flags), and the model and key the
// result names. Read at start-up and again on SIGHUP.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/shard_options.h"
#include "core/status.h"
#include "http/served_model.h"
#include "serving/config.h"

namespace stride::cli {

struct ServeArgs {
  std::string config;
  std::vector<std::pair<std::string, std::string*>> flags;  // key -> value given on the command line
  std::string model, host, port, max_batch, max_queue, kv_budget, threads, attention, log_level, api_keys_file,
      max_context_length, request_timeout_s, audit_log, grpc_port, kv_shared_tier, head_type;
  std::string model_dir, model_version, model_key_file, tls_cert, tls_key;
  std::vector<std::string> served_model_names;  // --served-model-name A B or A,B
  std::string embedding_pooling;
  std::string session_dir;
  std::string chat_template_file;
  std::string speculative, draft_model, draft_max, draft_min, lookup_ngram_min, lookup_ngram_max;
  bool lenient = false;  // --lenient: strict_requests false
  std::map<std::string, std::string> rope;  // --rope-scaling ... by config key
  // A shard set (cli/serve_shard.h): rank 0 serves HTTP and routes prompts of
  // shard_min_tokens or more to the set; ranks above 0 are its workers.
  ShardArgs shard;
  int64_t shard_min_tokens = 0;  // 0: more than this host's KV pool holds
};

// Registers --config and every flag on `cmd`; `a` must outlive the app.
void add_serve_options(CLI::App& cmd, ServeArgs& a);

// Config file < environment < flags. Run at start-up and again on SIGHUP.
Expected<serving::ServeConfig> read_config(const ServeArgs& a);

// The model the config names: a file, or a published version of model_dir.
Expected<server::ModelRef> configured_model(const serving::ServeConfig& cfg);

// The key for encrypted model files, when the config names one (else the
// loader falls back to STRIDE_MODEL_KEY / STRIDE_MODEL_KEY_FILE).
Status install_model_key(const serving::ServeConfig& cfg);

}  // namespace stride::cli

#include "cli/serve_model_version.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/rope_options.h"
#include "cli/serve_encoder.h"
#include "cli/serve_shared_tier.h"
#include "cli/serve_stage.h"
#include "core/sha256.h"
#include "encoder/encoder_model.h"
#include "engine/step_runner.h"
#include "http/log.h"
#include "loader/chat_template_source.h"
#include "loader/encrypted_file.h"
#include "serving/scheduler.h"
#include "serving/tool_format.h"

namespace stride::cli {

namespace {

using server::LogLevel;
using server::log;

// Warm-up: one short forward pass so first requests do not pay page faults
// and kernel set-up; the sequence is removed afterwards.
Status warm_up(Engine& engine) {
  auto seq = engine.kv().add_sequence();
  if (!seq) return seq.status();
  std::vector<int32_t> ids(8, engine.tokenizer()->bos_id() >= 0 ? engine.tokenizer()->bos_id() : 0);
  std::vector<float> logits(engine.config().n_vocab);
  Status st = run_sequence(engine.model(), engine.kv(), *seq, ids.data(), (int)ids.size(), false, logits.data(), engine.pool());
  engine.kv().remove_sequence(*seq);
  return st;
}

}  // namespace

Expected<EngineOptions> serve_engine_options(const serving::ServeConfig& cfg, const std::string& path,
                                             const std::string& digest) {
  ModelRunOptions mo;
  mo.model = path;
  mo.attention = cfg.attention;
  // `sparsity` is the default of top-k policies that name no budget of their own.
  if (mo.attention.rfind("topk", 0) == 0 && mo.attention.find("sparsity=") == std::string::npos &&
      mo.attention.find("mass=") == std::string::npos) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "sparsity=%g", cfg.sparsity);
    mo.attention += (mo.attention == "topk" ? ":" : ",") + std::string(buf);
  }
  mo.threads = cfg.threads;
  mo.kv_budget = cfg.kv_budget;
  mo.max_context = cfg.max_context_length;
  mo.page_size = cfg.page_size;
  mo.kv_type = cfg.cache_compression == "int8" ? "int8" : cfg.kv_type;
  mo.layer_policies = cfg.layer_attention;
  mo.rope = cfg.rope;
  mo.head_type = cfg.head_type;
  STRIDE_ASSIGN_OR_RETURN(EngineOptions eo, to_engine_options(mo, cfg.max_context_length));
  eo.prefill_chunk = cfg.prefill_chunk;
  eo.show_progress = false;
  eo.prefix_cache = cfg.cache_reuse;
  eo.model_version = digest;  // prefix-cache keys never match across model files
  if (!cfg.kv_offload_bytes.empty() && cfg.kv_offload_bytes != "0") {  // "0": no offload tier
    STRIDE_ASSIGN_OR_RETURN(eo.kv_offload_bytes, parse_bytes(cfg.kv_offload_bytes));
  }
  eo.kv_offload_file = cfg.kv_offload_file;
  eo.draft_model_path = cfg.draft_model;
  eo.draft_sequences = cfg.max_batch;
  return eo;
}

Expected<std::unique_ptr<Engine>> load_serve_engine(const serving::ServeConfig& cfg, const EngineOptions& eo) {
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(eo));
  if (!engine->tokenizer()) return Unsupported("serving needs a GGUF model with a tokenizer");
  STRIDE_RETURN_IF_ERROR(attach_shared_tier(cfg, *engine));
  return engine;
}

// One model version, from path to warmed-up scheduler, each stage logged:
// model path and version, sha256, weights + KV pool, kernels + warm-up.
Expected<std::shared_ptr<server::ModelHandle>> load_version(const serving::ServeConfig& cfg, const server::ModelRef& ref,
                                                            serving::Metrics& metrics, const ShardRouteFactory& route) {
  const std::string& path = ref.path;
  const std::string& expected_sha = ref.sha256;
  if (EncoderModel::is_encoder_folder(path)) return load_encoder_version(cfg, ref, metrics);
  Stage path_stage("model path");
  std::error_code ec;
  // An HF folder (config.json + safetensors): its size is that of its files.
  std::uintmax_t size = 0;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      if (e.is_regular_file(ec)) size += e.file_size(ec);
  } else {
    size = std::filesystem::file_size(path, ec);
  }
  if (ec) return NotFound("model " + path + ": " + ec.message());
  path_stage.done({{"model", path},
                   {"version", ref.version.empty() ? "-" : ref.version},
                   {"bytes", std::to_string(size)},
                   {"encrypted", is_encrypted_model(path) ? "yes" : "no"}});

  Stage sha_stage("sha256");
  STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_model(path));
  if (!expected_sha.empty() && expected_sha != digest) {
    return Corrupt("sha256 mismatch for " + path + ": expected " + expected_sha + ", got " + digest);
  }
  sha_stage.done({{"sha256", digest}, {"verified", expected_sha.empty() ? "no (no model_sha256 given)" : "yes"}});

  Stage engine_stage("load weights + allocate KV pool");
  auto m = std::make_shared<server::ModelHandle>();
  STRIDE_ASSIGN_OR_RETURN(const EngineOptions eo, serve_engine_options(cfg, path, digest));
  STRIDE_ASSIGN_OR_RETURN(m->owned_engine, load_serve_engine(cfg, eo));
  Engine& engine = *m->owned_engine;
  const KvStats ks = engine.kv().stats();
  engine_stage.done({{"kv_pages", std::to_string(ks.pages_total)},
                     {"kv_bytes", std::to_string(ks.pages_total * ks.bytes_per_page)},
                     {"threads", std::to_string(engine.pool().size())},
                     {"rope_scaling", rope_scaling_summary(engine.config().rope_scaling)}});

  Stage warm_stage("prepare kernels + warm-up");
  if (Status st = warm_up(engine); !st.ok()) return Internal("warm-up failed: " + st.message());
  warm_stage.done();

  serving::SchedulerOptions so;
  so.max_batch = cfg.max_batch;
  so.max_queue = cfg.max_queue;
  so.step_tokens = cfg.prefill_chunk;
  so.max_context = cfg.max_context_length;
  STRIDE_ASSIGN_OR_RETURN(so.speculative.mode, parse_speculative_mode(cfg.speculative));
  so.speculative.draft_max = cfg.draft_max;
  so.speculative.draft_min = cfg.draft_min;
  so.speculative.ngram_min = cfg.lookup_ngram_min;
  so.speculative.ngram_max = cfg.lookup_ngram_max;
  // The tool formats that write their calls or channels with control tokens.
  for (serving::ToolFormat f : {serving::ToolFormat::MistralJson, serving::ToolFormat::MistralArgs,
                                serving::ToolFormat::Harmony})
    for (std::string& t : serving::tool_format_control_texts(f)) so.grammar_control_texts.push_back(std::move(t));
  m->owned_scheduler = std::make_unique<serving::Scheduler>(engine, so, metrics);
  if (route) m->owned_scheduler->set_shard_route(route(engine));
  m->owned_scheduler->start();
  m->engine = &engine;
  m->scheduler = m->owned_scheduler.get();
  m->names = cfg.served_model_names;
  if (m->names.empty()) m->names.push_back(std::filesystem::path(path).filename().string());
  m->id = m->names.front();
  m->path = path;
  m->version = ref.version.empty() ? digest.substr(0, 16) : ref.version;
  m->sha256 = digest;
  const ModelSource& source = engine.model().source();
  STRIDE_ASSIGN_OR_RETURN(std::string tmpl, model_chat_template(source));
  if (!cfg.chat_template_file.empty()) {  // replaces the GGUF's template, as llama-server's option does
    std::ifstream f(cfg.chat_template_file, std::ios::binary);
    if (!f) return NotFound("cannot read chat_template_file " + cfg.chat_template_file);
    std::stringstream text;
    text << f.rdbuf();
    tmpl = text.str();
  }
  const std::string arch = source.gguf() ? source.gguf()->get_string_or("general.architecture", "")
                                         : arch_name(source.config.arch);
  m->chat = serving::detect_chat_template(tmpl, arch, serving::chat_tokens_of(*engine.tokenizer()));
  m->attention = eo.attention;
  log(LogLevel::Info, "model version ready",
      {{"model", m->id},
       {"version", m->version},
       {"chat_template", m->chat.ok() ? serving::chat_template_name(*m->chat) : m->chat.status().message()},
       {"tool_format", m->chat.ok() ? serving::tool_format_name(m->chat->tool_format) : "generic"}});
  return m;
}

}  // namespace stride::cli

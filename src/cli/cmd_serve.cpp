// `stride serve`: the OpenAI-compatible HTTP server.
// Start-up stages (each logged with its duration): config, model path and
// version, sha256, engine (weights + KV pool), warm-up, ready. SIGTERM/SIGINT
// stop accepting, drain the running requests and exit 0.
#include <signal.h>

#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "engine/step_runner.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/rope_options.h"
#include "cli/serve_encoder.h"
#include "cli/serve_shared_tier.h"
#include "encoder/encoder_model.h"
#include "loader/chat_template_source.h"
#include "loader/model_versions.h"
#include "loader/encrypted_file.h"
#include "core/sha256.h"
#include "http/api.h"
#include "http/http_server.h"
#include "http/log.h"
#include "serving/config.h"
#include "serving/scheduler.h"
#include "serving/tool_format.h"
#ifdef STRIDE_WITH_GRPC
#include "rpc/grpc_server.h"
#endif

extern char** environ;

namespace stride::cli {

namespace {

using server::LogLevel;
using server::log;
using SteadyClock = std::chrono::steady_clock;

struct ServeArgs {
  std::string config;
  std::vector<std::pair<std::string, std::string*>> flags;  // key -> value given on the command line
  std::string model, host, port, max_batch, max_queue, kv_budget, threads, attention, log_level, api_keys_file,
      max_context_length, request_timeout_s, audit_log, grpc_port, kv_shared_tier;
  std::string model_dir, model_version, model_key_file, tls_cert, tls_key;
  std::vector<std::string> served_model_names;  // --served-model-name A B or A,B
  std::string embedding_pooling;
  std::string session_dir;
  std::string chat_template_file;
  std::string speculative, draft_model, draft_max, draft_min, lookup_ngram_min, lookup_ngram_max;
  std::map<std::string, std::string> rope;  // --rope-scaling ... by config key
};

// Times one start-up stage and logs it.
class Stage {
 public:
  explicit Stage(std::string name) : name_(std::move(name)), t0_(SteadyClock::now()) {}
  void done(std::vector<std::pair<std::string, std::string>> fields = {}) {
    fields.insert(fields.begin(), {"stage", name_});
    fields.push_back({"seconds", std::to_string(std::chrono::duration<double>(SteadyClock::now() - t0_).count())});
    log(LogLevel::Info, "start-up stage done", fields);
  }

 private:
  std::string name_;
  SteadyClock::time_point t0_;
};

int fail_log(const std::string& message) {
  log(LogLevel::Error, message);
  return 1;
}

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

// One model version, from path to warmed-up scheduler, each stage logged:
// model path and version, sha256, weights + KV pool, kernels + warm-up.
Expected<std::shared_ptr<server::ModelHandle>> load_version(const serving::ServeConfig& cfg, const server::ModelRef& ref,
                                                            serving::Metrics& metrics) {
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
  auto m = std::make_shared<server::ModelHandle>();
  STRIDE_ASSIGN_OR_RETURN(m->owned_engine, Engine::create(eo));
  Engine& engine = *m->owned_engine;
  if (!engine.tokenizer()) return Unsupported("serving needs a GGUF model with a tokenizer");
  STRIDE_RETURN_IF_ERROR(attach_shared_tier(cfg, engine));
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

Expected<std::unique_ptr<SessionStore>> open_session_store(const serving::ServeConfig& cfg) {
  SessionLimits limits;
  limits.dir = cfg.session_dir;
  auto file = parse_bytes(cfg.session_max_bytes);
  if (!file || *file <= 0) return InvalidArgument("config: session_max_bytes = '" + cfg.session_max_bytes + "' is not a size");
  auto total = parse_bytes(cfg.session_max_total_bytes);
  if (!total || *total <= 0)
    return InvalidArgument("config: session_max_total_bytes = '" + cfg.session_max_total_bytes + "' is not a size");
  limits.max_file_bytes = *file;
  limits.max_total_bytes = *total;
  return SessionStore::open(limits);
}

// Config file < environment < flags. Run at start-up and again on SIGHUP.
Expected<serving::ServeConfig> read_config(const ServeArgs& a) {
  STRIDE_ASSIGN_OR_RETURN(serving::ServeConfig cfg, serving::load_config(a.config, environ));
  for (const auto& [key, value] : a.flags) {
    if (value->empty()) continue;
    Status st = serving::set_config_value(cfg, key, *value);
    if (!st.ok()) return Status(st.code(), st.message() + " (from --" + key + ")");
  }
  if (!a.served_model_names.empty()) {
    std::string joined;
    for (const std::string& n : a.served_model_names) joined += (joined.empty() ? "" : ",") + n;
    STRIDE_RETURN_IF_ERROR(serving::set_config_value(cfg, "served_model_name", joined));
  }
  STRIDE_RETURN_IF_ERROR(serving::finalize_config(cfg));
  return cfg;
}

// The model the config names: a file, or a published version of model_dir.
Expected<server::ModelRef> configured_model(const serving::ServeConfig& cfg) {
  if (!cfg.model_dir.empty()) return server::model_ref_for_version(cfg.model_dir, cfg.model_version);
  if (cfg.model.empty()) {
    return InvalidArgument("no model: give --model, or model_dir + model_version (config, --model-dir/--model-version "
                           "or STRIDE_MODEL_DIR/STRIDE_MODEL_VERSION)");
  }
  return server::ModelRef{cfg.model, cfg.model_sha256, "", ""};
}

// The key for encrypted model files, when the config names one (else the
// loader falls back to STRIDE_MODEL_KEY / STRIDE_MODEL_KEY_FILE).
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

server::HttpServerOptions http_options(const serving::ServeConfig& cfg, const std::vector<server::Cidr>& allowlist) {
  server::HttpServerOptions ho;
  ho.host = cfg.host;
  ho.port = cfg.port;
  ho.max_body_bytes = cfg.max_body_bytes;
  ho.tls_cert_file = cfg.tls_cert_file;
  ho.tls_key_file = cfg.tls_key_file;
  ho.io_threads = cfg.io_threads;
  ho.max_connections = cfg.max_connections;
  ho.max_connections_per_ip = cfg.max_connections_per_ip;
  ho.header_timeout_s = cfg.header_timeout_s;
  ho.body_timeout_s = cfg.body_timeout_s;
  ho.idle_timeout_s = cfg.idle_timeout_s;
  ho.write_timeout_s = cfg.write_timeout_s;
  ho.keepalive_max_requests = cfg.keepalive_max_requests;
  if (!allowlist.empty()) {
    ho.accept_filter = [allowlist](const std::string& ip) { return server::ip_allowed(ip, allowlist); };
  }
  return ho;
}

// SIGHUP: reopens the audit log, re-reads the config and switches to the model it names.
void on_sighup(ServeArgs& a, server::Api& api, server::AuditLog* audit) {
  // SIGHUP also reopens the audit log (after logrotate moved it).
  if (audit) {
    if (Status st = audit->reopen(); !st.ok()) {
      log(LogLevel::Error, "SIGHUP: audit log not reopened; still writing the old file", {{"reason", st.message()}});
    }
    server::AuditEvent ev;
    ev.kind = "sighup";
    ev.client_ip = "-";
    ev.detail = "audit log reopened; reloading the configured model";
    (void)audit->write_event(ev);
  }
  // SIGHUP: re-read the config file (the environment is fixed at start) and
  // load the model it names beside the serving one. Only the model keys
  // (model, model_sha256, model_dir, model_version, model key) take effect;
  // everything else needs a restart.
  auto fresh = read_config(a);
  Expected<server::ModelRef> ref = fresh.ok() ? configured_model(*fresh) : Expected<server::ModelRef>(fresh.status());
  if (ref.ok()) {
    if (Status st = install_model_key(*fresh); !st.ok()) ref = st;
  }
  if (!ref.ok()) {
    log(LogLevel::Error, "SIGHUP: config rejected; the old version keeps serving", {{"reason", ref.status().message()}});
    return;
  }
  log(LogLevel::Info, "SIGHUP: loading the configured model",
      {{"model", ref->path}, {"version", ref->version.empty() ? "-" : ref->version}});
  auto secs = api.switch_model(*ref);
  if (secs.ok()) {
    api.set_model_dir(fresh->model_dir);
    log(LogLevel::Info, "model switched", {{"version", api.model()->version}, {"seconds", std::to_string(*secs)}});
  } else {
    log(LogLevel::Error, "model switch failed; the old version keeps serving", {{"reason", secs.status().message()}});
  }
}

// New generation requests get 503 while running and queued ones finish (a
// version replaced earlier drains when its last request lets go of it).
void drain_and_close(server::Api& api, server::HttpServer& http) {
  api.set_draining();
  {
    server::ModelPtr current = api.model();
    if (current && current->scheduler) current->scheduler->drain_and_stop();
    if (current && current->encoder) current->encoder->drain_and_stop();
  }
  http.stop();  // no new connections
  // Handlers write their last bytes; then every connection closes and every
  // thread is joined, so nothing runs after serve() returns.
  if (!http.wait_handlers(10000)) log(LogLevel::Warning, "requests still running after 10 s; closing");
  http.close_idle_connections();
  http.shutdown();
}

int serve(ServeArgs& a) {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  // Every thread inherits the mask; the main thread takes the signals with sigwait.
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Stage config_stage("config");
  auto loaded = read_config(a);
  if (!loaded) return fail_log(loaded.status().message());
  serving::ServeConfig cfg = std::move(*loaded);
  server::set_log_level(cfg.log_level);
  auto first_ref = configured_model(cfg);
  if (!first_ref) return fail_log(first_ref.status().message());
  if (!cfg.model_dir.empty() && cfg.model_version != kActiveVersionName) {
    // A pinned version wins over the recorded one (and becomes the recorded one once it serves).
    if (auto active = read_active_model_version(cfg.model_dir); active.ok() && *active != first_ref->version) {
      log(LogLevel::Warning, "the config pins a version other than the active one",
          {{"pinned", first_ref->version}, {"active", *active}});
    }
  }
  if (Status st = install_model_key(cfg); !st.ok()) return fail_log(st.message());
  if (!server::is_loopback_host(cfg.host) && cfg.api_keys.empty()) {
    return fail_log("binding to " + cfg.host + " (beyond loopback) requires API keys (api_keys_file or STRIDE_API_KEYS)");
  }
  std::vector<server::Cidr> allowlist;
  for (const auto& c : cfg.allowlist) {
    auto cidr = server::parse_cidr(c);
    if (!cidr) return fail_log(cidr.status().message());
    allowlist.push_back(*cidr);
  }
  std::unique_ptr<server::AuditLog> audit;
  if (!cfg.audit_log.empty()) {
    auto opened = server::AuditLog::open(cfg.audit_log);
    if (!opened) return fail_log(opened.status().message());
    audit = std::move(*opened);
  }
  if (cfg.reference_window != 0) {
    log(LogLevel::Warning, "reference_window is accepted but not used by this engine yet");
  }
  config_stage.done({{"api_keys", std::to_string(cfg.api_keys.size())}, {"max_batch", std::to_string(cfg.max_batch)}});

  // HTTP comes up first so /health answers and /ready says "loading".
  serving::Metrics metrics;
  server::Api api(cfg, metrics, audit.get(), allowlist);
  if (!cfg.session_dir.empty()) {
    auto store = open_session_store(cfg);
    if (!store) return fail_log(store.status().message());
    api.set_session_store(std::move(*store));
  }
  const server::HttpServerOptions ho = http_options(cfg, allowlist);
  server::HttpServer http(ho, [&api](const server::HttpRequest& req, server::Responder& res) { api.handle(req, res); });
  if (Status st = http.start(); !st.ok()) return fail_log(st.message());
  log(LogLevel::Info, "listening",
      {{"host", cfg.host}, {"port", std::to_string(http.port())}, {"tls", ho.tls_cert_file.empty() ? "no" : "yes"}});

#ifdef STRIDE_WITH_GRPC
  std::unique_ptr<rpc::GrpcServer> grpc_server;
  if (cfg.grpc_port >= 0) {
    auto started = rpc::GrpcServer::start(api, cfg);
    if (!started) return fail_log(started.status().message());
    grpc_server = std::move(*started);
    log(LogLevel::Info, "gRPC listening", {{"host", cfg.host}, {"port", std::to_string(grpc_server->port())}});
  }
#else
  if (cfg.grpc_port >= 0) return fail_log("grpc_port: this build has no gRPC (install libgrpc++-dev and rebuild)");
#endif

  auto loader = [&cfg, &metrics](const server::ModelRef& ref) { return load_version(cfg, ref, metrics); };
  auto first = loader(*first_ref);
  if (!first) return fail_log(first.status().message());
  (void)server::record_active_version(*first_ref);  // logged on failure
  api.set_loader(loader);
  api.set_model_dir(cfg.model_dir);
  api.set_model(std::move(*first));
#ifdef STRIDE_WITH_GRPC
  if (grpc_server) grpc_server->set_serving(true);
#endif
  log(LogLevel::Info, "ready", {{"port", std::to_string(http.port())}});

  int sig = 0;
  for (;;) {
    sigwait(&sigs, &sig);
    if (sig != SIGHUP) break;
    on_sighup(a, api, audit.get());
  }
  log(LogLevel::Info, "signal received: draining", {{"signal", std::to_string(sig)}});
#ifdef STRIDE_WITH_GRPC
  if (grpc_server) grpc_server->set_serving(false);
#endif
  drain_and_close(api, http);
#ifdef STRIDE_WITH_GRPC
  if (grpc_server) grpc_server->shutdown(10.0);  // its calls have finished with the scheduler
#endif
  log(LogLevel::Info, "stopped");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching");
  cmd->add_option("--config", a->config, "YAML config file (see configs/stride.example.yaml)");
  auto flag = [&](const char* name, const char* key, std::string& target, const char* help) {
    cmd->add_option(name, target, help);
    a->flags.push_back({key, &target});
  };
  flag("--model,-m", "model", a->model, "GGUF file, or a BERT encoder folder (embeddings only)");
  cmd->add_option("--served-model-name", a->served_model_names,
                  "names clients pass as \"model\" (the first is reported; default: the file name)")
      ->delimiter(',');
  flag("--host", "host", a->host, "bind address (default 127.0.0.1)");
  flag("--grpc-port", "grpc_port", a->grpc_port, "serve gRPC (stride.v1.Inference) on this port too (0 = any free port)");
  flag("--port", "port", a->port, "port (default 8080; 0 = any free port)");
  flag("--max-batch", "max_batch", a->max_batch, "sequences decoded together (default 8)");
  flag("--max-queue", "max_queue", a->max_queue, "waiting requests before 429 (default 64)");
  flag("--kv-budget", "kv_budget", a->kv_budget, "KV pool size, e.g. 512M");
  flag("--kv-shared-tier", "kv_shared_tier", a->kv_shared_tier,
       "share prefix KV pages with other replicas through Redis: redis://[:password@]host:port[/db] "
       "(needs kv_shared_tier_secret)");
  flag("--threads", "threads", a->threads, "compute threads (0 = all cores)");
  flag("--attention,-a", "attention", a->attention, "policy for global layers");
  flag("--log-level", "log_level", a->log_level, "DEBUG | INFO | WARNING | ERROR");
  flag("--api-keys-file", "api_keys_file", a->api_keys_file, "file with one API key per line");
  flag("--ctx-size,-c", "max_context_length", a->max_context_length, "max tokens per sequence");
  flag("--request-timeout", "request_timeout_s", a->request_timeout_s, "seconds before a request ends with 'timeout'");
  flag("--audit-log", "audit_log", a->audit_log, "JSON-lines audit log path");
  flag("--model-dir", "model_dir", a->model_dir, "directory of published versions (see stride model publish)");
  flag("--model-version", "model_version", a->model_version,
       "version of --model-dir to serve (default 'active': the one <model-dir>/ACTIVE records)");
  flag("--model-key-file", "model_key_file", a->model_key_file, "AES-256 key for encrypted model files");
  flag("--tls-cert", "tls_cert_file", a->tls_cert, "PEM certificate chain: serve HTTPS only");
  flag("--tls-key", "tls_key_file", a->tls_key, "PEM private key for --tls-cert");
  flag("--session-dir", "session_dir", a->session_dir,
       "directory of saved sessions (POST /v1/sessions/NAME, \"session\" in requests); off when unset");
  flag("--embedding-pooling", "embedding_pooling", a->embedding_pooling,
       "/v1/embeddings of a decoder model: last | mean (default last)");
  flag("--chat-template-file", "chat_template_file", a->chat_template_file,
       "Jinja chat template used instead of the GGUF's (its tool-call syntax too)");
  flag("--speculative", "speculative", a->speculative,
       "speculative decoding for requests that do not choose: off | prompt-lookup | draft (default off)");
  flag("--draft-model", "draft_model", a->draft_model, "draft model (GGUF, same vocabulary) for --speculative draft");
  flag("--draft-max", "draft_max", a->draft_max, "tokens drafted per step at most (default 8)");
  flag("--draft-min", "draft_min", a->draft_min, "fewer drafts found: decode plainly (default 1)");
  flag("--lookup-ngram-min", "lookup_ngram_min", a->lookup_ngram_min, "prompt lookup: shortest n-gram (default 1)");
  flag("--lookup-ngram-max", "lookup_ngram_max", a->lookup_ngram_max, "prompt lookup: longest n-gram (default 3)");
  add_rope_flags(cmd, a->rope, a->flags);
  cmd->callback([a, &exit_code] { exit_code = serve(*a); });
}

}  // namespace stride::cli

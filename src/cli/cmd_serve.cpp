// `stride serve`: the OpenAI-compatible HTTP server.
// Start-up stages (each logged with its duration): config, model path and
// version, sha256, engine (weights + KV pool), warm-up, ready. SIGTERM/SIGINT
// stop accepting, drain the running requests and exit 0.
#include <signal.h>

#include <memory>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/serve_config.h"
#include "cli/serve_model_version.h"
#include "cli/serve_shard.h"
#include "cli/serve_stage.h"
#include "http/api.h"
#include "http/http_server.h"
#include "http/log.h"
#include "loader/model_versions.h"
#include "serving/config.h"
#include "serving/scheduler.h"
#ifdef STRIDE_WITH_GRPC
#include "rpc/grpc_server.h"
#endif

namespace stride::cli {

namespace {

using server::LogLevel;
using server::log;

int fail_log(const std::string& message) {
  log(LogLevel::Error, message);
  return 1;
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
  if (a.shard.sharded()) {  // the workers hold the model too: the whole set restarts for another
    log(LogLevel::Error, "SIGHUP: a server with a shard set does not switch models; the old version keeps serving");
    return;
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
  if (Status st = check_shard_args(a.shard); !st.ok()) return fail_log(st.message());
  if (a.shard.sharded() && a.shard.rank > 0) return serve_shard_worker(a, cfg, *first_ref);  // no HTTP
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

  const ShardRouteFactory shard_route = shard_route_factory(a, cfg, metrics);
  auto loader = [&cfg, &metrics, &shard_route](const server::ModelRef& ref) {
    return load_version(cfg, ref, metrics, shard_route);
  };
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
  add_serve_options(*cmd, *a);
  add_serve_shard_options(*cmd, *a);
  cmd->callback([a, &exit_code] { exit_code = serve(*a); });
}

}  // namespace stride::cli

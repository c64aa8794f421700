#include "cli/serve_shard.h"

#include <csignal>

#include "cli/serve_stage.h"
#include "http/log.h"
#include "kv/shard_layout.h"
#ifdef STRIDE_WITH_GLOO
#include "dist/shard_set_route.h"
#include "dist/shard_worker.h"
#endif

namespace stride::cli {

using server::LogLevel;
using server::log;

void add_serve_shard_options(CLI::App& cmd, ServeArgs& a) {
  add_shard_options(&cmd, a.shard);
  cmd.add_option("--shard-min-tokens", a.shard_min_tokens,
                 "rank 0: prompts of this many tokens or more go to the shard set (default: more than this "
                 "host's KV pool holds)")
      ->check(CLI::NonNegativeNumber);
}

ShardRouteFactory shard_route_factory(const ServeArgs& a, const serving::ServeConfig& cfg, serving::Metrics& metrics) {
#ifndef STRIDE_WITH_GLOO
  (void)a, (void)cfg, (void)metrics;
  return {};
#else
  if (!a.shard.sharded() || a.shard.rank != 0) return {};
  dist::ShardSetRouteOptions ro;
  ro.group = shard_group_options(a.shard);
  ro.min_tokens = a.shard_min_tokens;
  ro.max_queue = cfg.max_queue;
  // The layout from the longest context a request may take (kv/shard_layout.h), sent with each job.
  ro.shard_tokens = resolve_shard_tokens(a.shard.shard_tokens, cfg.max_context_length, a.shard.world, cfg.page_size);
  return [ro, &metrics](Engine& engine) -> std::unique_ptr<serving::ShardRoute> {
    log(LogLevel::Info, "shard set: rank 0",
        {{"world", std::to_string(ro.group.world)},
         {"rendezvous", ro.group.rendezvous},
         {"prefix", ro.group.prefix},
         {"min_tokens", ro.min_tokens > 0 ? std::to_string(ro.min_tokens) : "more than the KV pool holds"},
         {"shard_tokens", ro.shard_tokens > 0 ? std::to_string(ro.shard_tokens) : "balanced"}});
    return std::make_unique<dist::ShardSetRoute>(engine, metrics, ro);
  };
#endif
}

int serve_shard_worker(const ServeArgs& a, const serving::ServeConfig& cfg, const server::ModelRef& ref) {
#ifndef STRIDE_WITH_GLOO
  (void)a, (void)cfg, (void)ref;
  log(LogLevel::Error, "this build has no context parallelism (Gloo was not found at build time)");
  return 1;
#else
  // The worker takes its signals the default way: SIGTERM ends it at once,
  // and rank 0 fails the request it was part of.
  sigset_t sigs;
  sigemptyset(&sigs);
  pthread_sigmask(SIG_SETMASK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a dead peer's socket fails the exchange instead of killing the process
  Stage engine_stage("load weights + allocate KV pool");
  auto eo = serve_engine_options(cfg, ref.path, "");
  auto engine = eo ? load_serve_engine(cfg, *eo) : Expected<std::unique_ptr<Engine>>(eo.status());
  if (!engine) {
    log(LogLevel::Error, engine.status().message());
    return 1;
  }
  engine_stage.done({{"kv_pages", std::to_string((*engine)->kv().stats().pages_total)}});
  log(LogLevel::Info, "shard worker ready",
      {{"rank", std::to_string(a.shard.rank)}, {"world", std::to_string(a.shard.world)}, {"prefix", a.shard.prefix}});
  const Status st = dist::run_shard_worker(**engine, shard_group_options(a.shard));
  log(LogLevel::Error, st.message());
  return 1;
#endif
}

}  // namespace stride::cli

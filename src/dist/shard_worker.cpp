#include "dist/shard_worker.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "dist/rendezvous.h"
#include "dist/shard_control.h"
#include "dist/shard_link.h"

namespace stride::dist {

namespace {

// Serves jobs until the group breaks; returns why.
Status serve_jobs(Engine& engine, ShardGroup& group) {
  for (;;) {
    STRIDE_ASSIGN_OR_RETURN(const ShardJob job, receive_job(group));
    if (job.kind == ShardJob::Kind::Heartbeat) continue;
    const int64_t restored_before = engine.kv().stats().pages_restored;
    bool refused_together = false;
    Expected<std::unique_ptr<ShardedGenerator>> g =
        ShardedGenerator::start(engine, group, job.prompt, job.options, &refused_together);
    Status st = g.ok() ? Status::Ok() : g.status();
    while (st.ok() && !(*g)->done()) {
      Expected<ShardToken> t = (*g)->next();
      if (!t) st = t.status();
    }
    const int tokens = g.ok() ? (int)(*g)->result().ids.size() : 0;
    const long long reused = g.ok() ? (long long)(*g)->result().reused_tokens : 0;
    const double prefill_cpu = g.ok() ? (*g)->result().prefill_cpu_seconds : 0;
    if (g.ok()) (*g).reset();  // the sequence's pages go back now
    std::fprintf(stderr,
                 "shard rank %d/%d: request %s: %s, %d tokens, %lld prompt tokens reused, %lld KV pages held, "
                 "prefill %.3f CPU s, %lld KV pages restored from the offload tier\n",
                 group.rank(), group.world(), job.request_id.c_str(), st.ok() ? "done" : st.message().c_str(), tokens,
                 reused, (long long)engine.kv().stats().pages_used, prefill_cpu,
                 (long long)(engine.kv().stats().pages_restored - restored_before));
    // A request every rank refused together leaves the ranks in step; whatever else failed leaves
    // them out of step: the group ends, and rank 0 learns it at once.
    if (!st.ok() && !refused_together) return st;
  }
}

}  // namespace

Status run_shard_worker(Engine& engine, const ShardGroupOptions& base) {
  if (base.rank <= 0) return InvalidArgument("a shard worker has a rank above 0");
  STRIDE_RETURN_IF_ERROR(parse_rendezvous(base.rendezvous).status());
  int64_t last_refused = -1;  // a generation not joined, or a store not read, is said once, not at every try
  std::string last_store_error;
  for (;;) {
    Expected<int64_t> g = latest_generation(base);
    if (!g && g.status().message() != last_store_error) {
      last_store_error = g.status().message();
      std::fprintf(stderr, "shard rank %d/%d: rendezvous: %s\n", base.rank, base.world, last_store_error.c_str());
    }
    if (!g || *g < 0) {  // rank 0 has not opened the set yet
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    ShardGroupOptions opts = base;
    opts.prefix = generation_prefix(base.prefix, *g);
    Expected<std::unique_ptr<ShardGroup>> group = ShardGroup::connect(opts);
    if (!group) {
      if (*g != last_refused)
        std::fprintf(stderr, "shard rank %d/%d: generation %lld not joined (trying again until rank 0 opens the next): %s\n",
                     base.rank, base.world, (long long)*g, group.status().message().c_str());
      last_refused = *g;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    std::fprintf(stderr, "shard rank %d/%d: connected (generation %lld)\n", base.rank, base.world, (long long)*g);
    const Status why = serve_jobs(engine, **group);
    std::fprintf(stderr, "shard rank %d/%d: generation %lld ended: %s\n", base.rank, base.world, (long long)*g,
                 why.message().c_str());
  }
}

}  // namespace stride::dist

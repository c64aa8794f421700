#include "dist/shard_set_route.h"

#include <cstdio>

#include "dist/shard_control.h"
#include "dist/shard_score.h"
#include "kv/kv_pages_needed.h"

namespace stride::dist {

namespace {

using serving::Clock;
using serving::Event;
using serving::EventKind;
using serving::RequestChannel;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// While idle, rank 0 tells the workers it is alive this often (they wait up
// to the group's deadline for it).
constexpr auto kHeartbeat = std::chrono::seconds(1);

// What a sharded request cannot ask for (the shard set decodes one plain sequence).
Status sharded_request_check(const serving::ServeRequest& r) {
  const char* what = r.grammar                          ? "constrained decoding (response_format, grammar)"
                     : r.prompt_logprobs >= 0           ? "prompt log-probabilities (echo with logprobs)"
                     : r.top_logprobs > 0               ? "top_logprobs alternatives"
                     : r.branches > 1 || !r.more_prompts.empty() ? "several choices or prompts (n, best_of, batched prompts)"
                     : r.restore || r.save_session      ? "saved sessions"
                                                        : nullptr;
  if (!what) return Status::Ok();
  return InvalidArgument(std::string("a prompt this long is sharded across ranks, which does not support ") + what);
}

}  // namespace

struct ShardSetRoute::Running {
  std::shared_ptr<RequestChannel> ch;
  std::unique_ptr<ShardedGenerator> gen;
  int n_generated = 0;
  Clock::time_point last_token;
};

ShardSetRoute::ShardSetRoute(Engine& engine, serving::Metrics& metrics, const ShardSetRouteOptions& opts)
    : engine_(engine), metrics_(metrics), opts_(opts), link_(opts.group) {}

ShardSetRoute::~ShardSetRoute() = default;

bool ShardSetRoute::takes(const serving::ServeRequest& r) const {
  if (r.embed) return false;
  const int64_t n = (int64_t)r.prompt.size();
  if (opts_.min_tokens > 0) return n >= opts_.min_tokens;
  // Automatic: what this host's whole pool could not hold, prompt and tokens.
  const KvManager& kv = engine_.kv();
  return pages_for_growth(engine_.layer_policies(), kv.config().page_size, 0, n + r.max_tokens,
                          engine_.model().max_chunk()) > kv.stats().pages_total;
}

Expected<int64_t> ShardSetRoute::rank0_pages(const serving::ServeRequest& r, int world) const {
  const int page = engine_.kv().config().page_size;
  STRIDE_ASSIGN_OR_RETURN(const KvShard mine,
                          every_rank_positions((int64_t)r.prompt.size(), world, 0, page, opts_.shard_tokens,
                                                       engine_shard_cost(engine_)));
  // Rank 0 runs its shard as one step; alone (a world of 1) it is also the root and keeps the generated tokens.
  const int64_t n = mine.tokens() + (world == 1 ? r.max_tokens : 0);
  return pages_for_growth(engine_.layer_policies(), page, 0, n, (int)mine.tokens());
}

void ShardSetRoute::enqueue(std::shared_ptr<RequestChannel> ch) {
  if (Status st = sharded_request_check(ch->request); !st.ok()) return fail(*ch, st);
  if ((int)queue_.size() >= opts_.max_queue)
    return fail(*ch, ResourceExhausted("the shard set's queue is full (" + std::to_string(opts_.max_queue) + ")"));
  queue_.push_back(std::move(ch));
}

void ShardSetRoute::fail(RequestChannel& ch, const Status& st) {
  std::fprintf(stderr, "shard set: request %s failed: %s\n", ch.request.id.c_str(), st.message().c_str());
  // Counted before the client can see the error, so its next /metrics read includes it.
  ++metrics_.sharded_failures;
  metrics_.count_finish("error");
  Event e;
  e.kind = EventKind::Error;
  e.code = st.code();
  e.message = st.message();
  ch.push(std::move(e));
}

void ShardSetRoute::advance() {
  ShardGroup* group = link_.group();
  metrics_.shard_set_connected = group ? 1 : 0;
  metrics_.shard_set_generation = link_.generation();
  if (running_) return step_running();
  if (queue_.empty()) {
    if (group) heartbeat(*group);
    return;
  }
  if (!group) {
    for (auto& ch : std::exchange(queue_, {}))
      fail(*ch, Unsupported("the shard set is not connected (its workers are down or still joining), "
                            "and a prompt this long needs it"));
    return;
  }
  // Rank 0 starts a request only when its pool has its shard's pages free
  // (the workers would otherwise wait on a rank 0 that cannot hold its part);
  // until then the request waits for local requests to finish.
  const Expected<int64_t> pages = rank0_pages(queue_.front()->request, group->world());
  const int64_t needed = pages.ok() ? *pages : 0;
  const KvStats ks = engine_.kv().stats();
  Status refused = pages.status();
  if (refused.ok() && needed > ks.pages_total)
    refused = ResourceExhausted("rank 0's KV pool (" + std::to_string(ks.pages_total) + " pages) cannot hold its shard (" +
                                std::to_string(needed) + " pages)");
  if (!refused.ok()) {
    fail(*queue_.front(), refused);
    queue_.pop_front();
    return;
  }
  if (needed <= ks.pages_total - ks.pages_used) start_next(*group);
}

void ShardSetRoute::heartbeat(ShardGroup& group) {
  const auto now = Clock::now();
  if (now - last_sent_ < kHeartbeat) return;
  last_sent_ = now;
  ShardJob beat;
  if (Status st = send_job(group, beat); !st.ok()) {
    std::fprintf(stderr, "shard set: lost while idle: %s\n", st.message().c_str());
    link_.reset();
  }
}

void ShardSetRoute::start_next(ShardGroup& group) {
  std::shared_ptr<RequestChannel> ch = std::move(queue_.front());
  queue_.pop_front();
  const serving::ServeRequest& r = ch->request;
  // Gone or late while it waited: it ends as a local request would, never reaching the workers.
  if (ch->cancelled() || Clock::now() >= r.deadline) return finish(*ch, ch->cancelled() ? "cancelled" : "timeout", 0);
  ++metrics_.sharded_requests;
  metrics_.queue_time.observe(seconds(Clock::now() - ch->arrived));
  metrics_.prompt_tokens += (int64_t)r.prompt.size();
  ShardJob job;
  job.kind = ShardJob::Kind::Generate;
  job.request_id = r.id;
  job.prompt = r.prompt;
  job.options.generate.max_tokens = r.max_tokens;
  job.options.generate.ignore_eos = r.ignore_eos;
  job.options.generate.stop = r.stop;
  job.options.generate.sampling = r.sampling;
  job.options.render_special = r.render_special;
  job.options.rank0_may_stop = true;
  job.options.shard_tokens = opts_.shard_tokens;
  const Status sent = send_job(group, job);
  last_sent_ = Clock::now();
  bool refused_together = false;
  Expected<std::unique_ptr<ShardedGenerator>> gen =
      sent.ok() ? ShardedGenerator::start(engine_, group, r.prompt, job.options, &refused_together)
                : Expected<std::unique_ptr<ShardedGenerator>>(sent);
  if (!gen) {
    metrics_.set_kv(engine_.kv().stats());
    fail(*ch, gen.status());
    // Refused by every rank together, the set stays in step for the next request. Otherwise the workers
    // took the job: a rank 0 that left it must end the group, or they would wait out the deadline.
    if (!refused_together) link_.reset();
    return;
  }
  running_ = std::make_unique<Running>();
  running_->ch = std::move(ch);
  running_->gen = std::move(*gen);
}

void ShardSetRoute::step_running() {
  Running& run = *running_;
  const std::shared_ptr<RequestChannel> held = run.ch;  // outlives running_
  RequestChannel& ch = *held;
  const auto now = Clock::now();
  const char* stop = ch.cancelled() ? "cancelled" : now >= ch.request.deadline ? "timeout" : nullptr;
  Expected<ShardToken> t = run.gen->next(stop != nullptr);
  last_sent_ = Clock::now();
  if (!t) {
    running_.reset();  // rank 0's pages go back before the client hears of the failure
    metrics_.set_kv(engine_.kv().stats());
    fail(ch, t.status());
    link_.reset();  // the ranks are out of step now, whatever failed
    return;
  }
  if (t->appended || !t->text.empty()) {
    Event ev;
    ev.text = t->text;
    if (t->appended) {
      ev.tokens = 1;
      ev.token_ids.push_back(t->id);
      if (ch.request.top_logprobs >= 0) ev.logprobs.push_back(TokenLogprob{t->id, t->logprob, {}});
      ++metrics_.generation_tokens;
      if (run.n_generated++ == 0) metrics_.ttft.observe(seconds(now - ch.arrived));
      else metrics_.itl.observe(seconds(now - run.last_token));
      run.last_token = now;
    }
    ch.push(std::move(ev));
  }
  if (!t->done) return;
  Event tail;
  tail.text = run.gen->finish_text();
  if (!tail.text.empty()) ch.push(std::move(tail));
  const std::string reason = stop ? stop : finish_reason_name(run.gen->result().finish);
  const int n_generated = run.n_generated;
  const int64_t cached = run.gen->result().set_reused_tokens;
  std::fprintf(stderr, "shard rank 0: request %s: done, %d tokens, %lld prompt tokens reused, prefill %.3f CPU s\n",
               ch.request.id.c_str(), run.n_generated, (long long)run.gen->result().reused_tokens,
               run.gen->result().prefill_cpu_seconds);
  running_.reset();  // pages back before "finished", as local requests do
  metrics_.set_kv(engine_.kv().stats());
  finish(ch, reason, n_generated, cached);
}

void ShardSetRoute::finish(RequestChannel& ch, const std::string& reason, int n_generated, int64_t cached) {
  Event done;
  done.kind = EventKind::Finish;
  done.finish_reason = reason;
  done.prompt_tokens = (int)ch.request.prompt.size();
  done.cached_tokens = (int)cached;
  done.completion_tokens = n_generated;
  metrics_.e2e.observe(seconds(Clock::now() - ch.arrived));
  metrics_.count_finish(reason);
  ch.push(std::move(done));
}

}  // namespace stride::dist

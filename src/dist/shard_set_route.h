#pragma once
// Rank 0's side of `stride serve`'s shard set: the requests the scheduler
// routes to it (serving/shard_route.h), one at a time, the others queued.
// For a request it sends the job to the workers (shard_control.h), prefills
// its own shard and then, a token per scheduler loop, takes part in the
// decode. The last rank samples (it holds the prompt's last position and so
// its logits) and broadcasts each token with its log-probability to every
// rank; rank 0 relays them to the request's channel, so streaming, stop
// strings and finish reasons stay with the front door. Before each token
// rank 0 tells the set whether to go on, so a cancelled or timed-out request
// ends on every rank.
//
// A failure of the group (a worker gone or stalled) fails the request with
// its IoError (HTTP 500, or an error event mid-stream), releases rank 0's
// pages, and drops the group: the link opens the next generation and the
// restarted workers join it (shard_link.h). Requests that arrive while no
// group is connected fail with Unsupported (HTTP 503).
#include <deque>
#include <memory>
#include <string>

#include "dist/shard_generate.h"
#include "dist/shard_link.h"
#include "engine/engine.h"
#include "serving/metrics.h"
#include "serving/shard_route.h"

namespace stride::dist {

struct ShardSetRouteOptions {
  ShardGroupOptions group;  // rank 0's; prefix: the set's, generations go under it
  // Prompts at least this long go to the set; 0: those whose pages (prompt
  // and max_tokens) are more than this host's whole pool.
  int64_t min_tokens = 0;
  int max_queue = 64;       // sharded requests waiting beyond the running one
  int64_t shard_tokens = 0;  // the layout sent with each job (ShardGenerateOptions::shard_tokens)
};

class ShardSetRoute final : public serving::ShardRoute {
 public:
  ShardSetRoute(Engine& engine, serving::Metrics& metrics, const ShardSetRouteOptions& opts);
  ~ShardSetRoute() override;

  bool takes(const serving::ServeRequest& r) const override;
  void enqueue(std::shared_ptr<serving::RequestChannel> ch) override;
  bool busy() const override { return running_ != nullptr || !queue_.empty(); }
  void advance() override;

 private:
  struct Running;
  // The pool pages rank 0's shard of r takes.
  Expected<int64_t> rank0_pages(const serving::ServeRequest& r, int world) const;
  void start_next(ShardGroup& group);
  void step_running();
  void heartbeat(ShardGroup& group);
  void fail(serving::RequestChannel& ch, const Status& st);
  // cached: the prompt tokens the ranks took from their prefix caches.
  void finish(serving::RequestChannel& ch, const std::string& reason, int n_generated, int64_t cached = 0);

  Engine& engine_;
  serving::Metrics& metrics_;
  ShardSetRouteOptions opts_;
  ShardLink link_;
  std::deque<std::shared_ptr<serving::RequestChannel>> queue_;
  std::unique_ptr<Running> running_;
  std::chrono::steady_clock::time_point last_sent_;
};

}  // namespace stride::dist

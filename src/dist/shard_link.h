#pragma once
// How `stride serve`'s shard set (re)connects without restarting rank 0.
// Every start of the set is a *generation*: rank 0 writes the marker
// "<prefix>.generation.<g>" into the rendezvous store, then connects the
// group under the prefix "<prefix>.g<g>". A worker (re)starting with the
// same --shard-prefix joins the newest generation it finds marked. When the
// group breaks (a worker died or stalled), rank 0 opens generation g + 1 and
// waits there for the workers; a connect attempt nobody completes within the
// deadline moves on to the next generation too, and a worker that joined a
// generation rank 0 just left fails its connect and looks again.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "dist/shard_group.h"

namespace stride::dist {

// The group keys of generation g.
std::string generation_prefix(const std::string& prefix, int64_t g);
// The newest generation marked in base's store under base.prefix; -1: none yet.
Expected<int64_t> latest_generation(const ShardGroupOptions& base);
Status mark_generation(const ShardGroupOptions& base, int64_t g);

// Rank 0's end: a thread that connects the next generation whenever there is
// no group, so connecting never holds up the scheduler.
class ShardLink {
 public:
  explicit ShardLink(const ShardGroupOptions& base);  // base.rank must be 0
  ~ShardLink();  // waits for a connect attempt under way (at most the deadline)
  ShardLink(const ShardLink&) = delete;
  ShardLink& operator=(const ShardLink&) = delete;

  // The connected group, or null while there is none. The caller's thread
  // only (the scheduler's): the group is handed over to it once connected.
  ShardGroup* group();
  // The group failed: it is dropped and the next generation opened.
  void reset();
  int64_t generation() const { return generation_.load(); }

 private:
  void connect_loop();

  ShardGroupOptions base_;
  std::unique_ptr<ShardGroup> current_;  // the caller's thread's
  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<ShardGroup> connected_;  // guarded by mu_: handed over by group()
  bool want_group_ = true;                 // guarded by mu_
  bool stopping_ = false;                  // guarded by mu_
  std::atomic<int64_t> generation_{-1};
  std::thread thread_;
};

}  // namespace stride::dist

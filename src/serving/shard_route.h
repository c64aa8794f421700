#pragma once
// A second way through the scheduler for requests too long for this host:
// a shard set that spreads the sequence over several processes or hosts
// (dist/shard_route_set.h; `stride serve --shard-world`). The scheduler hands
// it the requests it takes and calls advance() once per loop, on its own
// thread, between its local steps, so local requests keep being served while
// a sharded one runs.
#include <memory>

#include "serving/request.h"

namespace stride::serving {

class ShardRoute {
 public:
  virtual ~ShardRoute() = default;
  // Whether this request goes to the shard set (its prompt is long enough).
  virtual bool takes(const ServeRequest& r) const = 0;
  virtual void enqueue(std::shared_ptr<RequestChannel> ch) = 0;
  // Requests queued or running: the scheduler must not sit idle.
  virtual bool busy() const = 0;
  // One piece of work: a request's start (its prefill), one token, or a
  // heartbeat to the workers when idle.
  virtual void advance() = 0;
};

}  // namespace stride::serving

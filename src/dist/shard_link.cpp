#include "dist/shard_link.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>
#ifdef STRIDE_WITH_HIREDIS
#include <gloo/rendezvous/redis_store.h>
#endif

#include <chrono>
#include <cstdio>
#include <functional>

#include "dist/rendezvous.h"

namespace stride::dist {

namespace {

std::string marker_key(const std::string& prefix, int64_t g) { return prefix + ".generation." + std::to_string(g); }

// A file store that says whether a key is there without waiting (gloo's
// FileStore answers that only to its own kind).
class ProbedFileStore final : public gloo::rendezvous::FileStore {
 public:
  using FileStore::FileStore;
  bool has(const std::string& key) { return check({key}); }
};

// Whether generation g is marked, for each g from 0 on.
Expected<std::function<bool(int64_t)>> generation_probe(const ShardGroupOptions& base) {
  STRIDE_ASSIGN_OR_RETURN(const RendezvousAddress addr, parse_rendezvous(base.rendezvous));
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, open_rendezvous(addr));  // checks it is there
  std::shared_ptr<gloo::rendezvous::Store> held = std::move(store);
  if (addr.kind == RendezvousAddress::Kind::File) {
    auto files = std::make_shared<ProbedFileStore>(addr.path);
    return std::function<bool(int64_t)>([files, prefix = base.prefix](int64_t g) { return files->has(marker_key(prefix, g)); });
  }
  return std::function<bool(int64_t)>([held, prefix = base.prefix](int64_t g) {
    try {
#ifdef STRIDE_WITH_HIREDIS
      if (auto* redis = dynamic_cast<gloo::rendezvous::RedisStore*>(held.get())) return redis->check({marker_key(prefix, g)});
#endif
      held->wait({marker_key(prefix, g)}, std::chrono::milliseconds(1));
      return true;
    } catch (const gloo::Exception&) {
      return false;
    }
  });
}

}  // namespace

std::string generation_prefix(const std::string& prefix, int64_t g) { return prefix + ".g" + std::to_string(g); }

Expected<int64_t> latest_generation(const ShardGroupOptions& base) {
  STRIDE_ASSIGN_OR_RETURN(const std::function<bool(int64_t)> marked, generation_probe(base));
  int64_t g = 0;
  while (marked(g)) ++g;
  return g - 1;
}

Status mark_generation(const ShardGroupOptions& base, int64_t g) {
  STRIDE_ASSIGN_OR_RETURN(const RendezvousAddress addr, parse_rendezvous(base.rendezvous));
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, open_rendezvous(addr));
  try {
    store->set(marker_key(base.prefix, g), std::vector<char>{'1'});
  } catch (const gloo::Exception& e) {
    return IoError("rendezvous: cannot mark shard set generation " + std::to_string(g) + ": " + e.what());
  }
  return Status::Ok();
}

ShardLink::ShardLink(const ShardGroupOptions& base) : base_(base) {
  thread_ = std::thread([this] { connect_loop(); });
}

ShardLink::~ShardLink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

ShardGroup* ShardLink::group() {
  if (!current_) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(connected_);
  }
  return current_.get();
}

void ShardLink::reset() {
  current_.reset();  // closes its connections, so the workers fail at once
  {
    std::lock_guard<std::mutex> lock(mu_);
    connected_.reset();
    want_group_ = true;
  }
  cv_.notify_all();
}

void ShardLink::connect_loop() {
  // A rank 0 restarted with the same prefix goes on after the generations marked before it.
  Expected<int64_t> last = latest_generation(base_);
  int64_t g = last.ok() ? *last + 1 : 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || want_group_; });
      if (stopping_) return;
    }
    ShardGroupOptions opts = base_;
    opts.prefix = generation_prefix(base_.prefix, g);
    Status st = mark_generation(base_, g);
    generation_.store(g);
    const auto t0 = std::chrono::steady_clock::now();
    Expected<std::unique_ptr<ShardGroup>> group =
        st.ok() ? ShardGroup::connect(opts) : Expected<std::unique_ptr<ShardGroup>>(st);
    ++g;
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return;
    if (!group) {
      std::fprintf(stderr, "shard set generation %lld: not connected: %s\n", (long long)(g - 1),
                   group.status().message().c_str());
      // A store that fails at once (a missing directory) is not retried in a tight loop.
      cv_.wait_until(lock, t0 + std::chrono::seconds(1), [&] { return stopping_; });
      continue;  // the next generation
    }
    std::fprintf(stderr, "shard rank 0/%d: connected (generation %lld)\n", base_.world, (long long)(g - 1));
    connected_ = std::move(*group);
    want_group_ = false;
  }
}

}  // namespace stride::dist

#include "dist/shard_link.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/store.h>

#include <chrono>
#include <cstdio>

#include "dist/rendezvous.h"

namespace stride::dist {

namespace {

std::string marker_key(const std::string& prefix, int64_t g) { return prefix + ".generation." + std::to_string(g); }

// Whether `key` is in the store, waiting for it only briefly (the stores
// answer a wait by polling; a key that is there returns at the first look).
bool has_key(gloo::rendezvous::Store& store, const std::string& key) {
  try {
    store.wait({key}, std::chrono::milliseconds(1));
    return true;
  } catch (const gloo::Exception&) {
    return false;
  }
}

}  // namespace

std::string generation_prefix(const std::string& prefix, int64_t g) { return prefix + ".g" + std::to_string(g); }

Expected<int64_t> latest_generation(const ShardGroupOptions& base) {
  STRIDE_ASSIGN_OR_RETURN(const RendezvousAddress addr, parse_rendezvous(base.rendezvous));
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, open_rendezvous(addr));
  int64_t g = 0;
  while (has_key(*store, marker_key(base.prefix, g))) ++g;
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

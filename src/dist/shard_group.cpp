#include "dist/shard_group.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>

#include <exception>

#include "dist/rendezvous.h"

namespace stride::dist {

namespace {

// Point-to-point slots live apart from the slots Gloo's collectives build
// (prefixes 0x01..0x08 in the top byte), so the two never match each other.
constexpr uint64_t kP2pSlotPrefix = 0x40ull << 56;

std::string who(int rank, int world) {
  return "shard rank " + std::to_string(rank) + "/" + std::to_string(world);
}

}  // namespace

ShardGroup::ShardGroup(Private, const ShardGroupOptions& opts)
    : rank_(opts.rank), world_(opts.world), timeout_(opts.timeout) {}

ShardGroup::~ShardGroup() = default;

template <class F>
Status ShardGroup::guarded(const char* what, F&& f) {
  if (!broken_.ok()) return broken_;
  try {
    f();
    return Status::Ok();
  } catch (const gloo::IoException& e) {
    // Gloo says "Timed out" / "Wait timeout" when the deadline passed; any
    // other I/O failure is a connection a peer closed (it exited, crashed or gave up).
    const std::string why = e.what();
    const bool late = why.find("imed out") != std::string::npos || why.find("timeout") != std::string::npos;
    broken_ = IoError(who(rank_, world_) + ": " + what + " failed: " +
                      (late ? "timed out after " + std::to_string(timeout_.count()) + " ms waiting for a peer"
                            : std::string("a peer is gone (it closed its connection: it died, or failed and gave up)")) +
                      " [" + why + "]");
  } catch (const std::exception& e) {
    broken_ = Internal(who(rank_, world_) + ": " + what + ": " + e.what());
  }
  // Closing the connections now tells the peers at once, instead of at their deadline.
  ring_send_.reset();
  ring_recv_.reset();
  ring_pending_ = false;
  context_.reset();
  return broken_;
}

Expected<std::unique_ptr<ShardGroup>> ShardGroup::connect(const ShardGroupOptions& opts) {
  if (opts.world < 1 || opts.rank < 0 || opts.rank >= opts.world)
    return InvalidArgument("shard group: rank " + std::to_string(opts.rank) + " of world " +
                           std::to_string(opts.world));
  if (opts.timeout.count() <= 0) return InvalidArgument("shard group: the timeout must be positive");
  STRIDE_ASSIGN_OR_RETURN(const RendezvousAddress addr, parse_rendezvous(opts.rendezvous));
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, open_rendezvous(addr));
  struct sigaction pipe_action {};
  if (sigaction(SIGPIPE, nullptr, &pipe_action) != 0 || pipe_action.sa_handler == SIG_DFL)
    return InvalidArgument("shard group: the process must ignore SIGPIPE first, or a peer's death would kill it");
  auto group = std::make_unique<ShardGroup>(Private{}, opts);
  const Status joined = group->guarded("connect", [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = opts.listen_host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(opts.rank, opts.world);
    context->setTimeout(opts.timeout);
    gloo::rendezvous::PrefixStore prefixed(opts.prefix, *store);
    context->connectFullMesh(prefixed, device);
    group->context_ = std::move(context);
  });
  if (!joined.ok()) return joined;
  return group;
}

uint64_t ShardGroup::next_p2p_slot(uint32_t tag) const { return kP2pSlotPrefix | tag; }

Status ShardGroup::send(int peer, const void* data, size_t bytes, uint32_t tag) {
  return guarded("send", [&] {
    auto buf = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, next_p2p_slot(tag));
    buf->waitSend(timeout_);
    payload_bytes_sent_ += (int64_t)bytes;
  });
}

Status ShardGroup::recv(int peer, void* data, size_t bytes, uint32_t tag) {
  return guarded("recv", [&] {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, next_p2p_slot(tag));
    buf->waitRecv(timeout_);
  });
}

Status ShardGroup::ring_pass_start(const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  if (ring_pending_) return Internal(who(rank_, world_) + ": a ring pass is already under way");
  // Ring steps count up on every rank alike; the top tag bit keeps them
  // apart from the caller's point-to-point tags.
  const uint64_t slot = next_p2p_slot(0x80000000u | (uint32_t)(ring_step_++ & 0x7fffffffu));
  ring_pending_ = true;
  return guarded("ring pass", [&] {
    if (recv_bytes > 0) {
      ring_recv_ = context_->createUnboundBuffer(recv, recv_bytes);
      ring_recv_->recv(prev_rank(), slot);
    }
    if (send_bytes > 0) {
      ring_send_ = context_->createUnboundBuffer(const_cast<void*>(send), send_bytes);
      ring_send_->send(next_rank(), slot);
    }
    payload_bytes_sent_ += (int64_t)send_bytes;
  });
}

Status ShardGroup::ring_pass_finish() {
  if (!broken_.ok()) return broken_;
  if (!ring_pending_) return Internal(who(rank_, world_) + ": no ring pass to finish");
  const Status done = guarded("ring pass", [&] {
    if (ring_recv_) ring_recv_->waitRecv(timeout_);
    if (ring_send_) ring_send_->waitSend(timeout_);
  });
  ring_send_.reset();
  ring_recv_.reset();
  ring_pending_ = false;
  return done;
}

namespace {

template <class T>
void allreduce_with(const std::shared_ptr<gloo::Context>& ctx, T* x, size_t n, uint32_t tag,
                    std::chrono::milliseconds timeout, void (*fn)(void*, const void*, const void*, size_t)) {
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(x, n);
  opts.setOutput(x, n);
  opts.setReduceFunction(fn);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

}  // namespace

Status ShardGroup::allreduce_max(float* x, size_t n) {
  return guarded("allreduce max", [&] {
    allreduce_with(context_, x, n, collective_tag_++, timeout_, &gloo::max<float>);
    payload_bytes_sent_ += (int64_t)(n * sizeof(float));
  });
}

Status ShardGroup::allreduce_sum(float* x, size_t n) {
  return guarded("allreduce sum", [&] {
    allreduce_with(context_, x, n, collective_tag_++, timeout_, &gloo::sum<float>);
    payload_bytes_sent_ += (int64_t)(n * sizeof(float));
  });
}

Status ShardGroup::allreduce_max(int64_t* x, size_t n) {
  return guarded("allreduce max", [&] {
    allreduce_with(context_, x, n, collective_tag_++, timeout_, &gloo::max<int64_t>);
    payload_bytes_sent_ += (int64_t)(n * sizeof(int64_t));
  });
}

Status ShardGroup::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= world_) return InvalidArgument(who(rank_, world_) + ": broadcast from rank " + std::to_string(root));
  return guarded("broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(collective_tag_++);
    opts.setTimeout(timeout_);
    gloo::broadcast(opts);
    if (rank_ == root) payload_bytes_sent_ += (int64_t)bytes * (world_ - 1);
  });
}

Status ShardGroup::gather(const void* data, size_t bytes, void* all, int root) {
  if (root < 0 || root >= world_) return InvalidArgument(who(rank_, world_) + ": gather to rank " + std::to_string(root));
  return guarded("gather", [&] {
    gloo::GatherOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(const_cast<void*>(data)), bytes);
    if (rank_ == root) opts.setOutput(static_cast<uint8_t*>(all), bytes * world_);
    opts.setTag(collective_tag_++);
    opts.setRoot(root);
    opts.setTimeout(timeout_);
    gloo::gather(opts);
    if (rank_ != root) payload_bytes_sent_ += (int64_t)bytes;
  });
}

}  // namespace stride::dist

#pragma once
// The ranks that share one sequence (context parallelism), connected to each
// other through Gloo's TCP transport: every rank a process, on one host or
// many, found through a rendezvous store (rendezvous.h).
//
// Every operation is collective in the sense that the ranks it names must
// call it in the same order; each has a deadline (options.timeout). A peer
// that died or went silent makes the operation return an IoError saying
// which ("a peer is gone", "timed out"); the group is then broken (every later call fails at once) and is
// rebuilt by connecting again. Nothing Gloo throws escapes this class.
//
// The process must ignore SIGPIPE (as `stride serve` does) before it
// connects: Gloo's writes to a socket that a dead peer closed would
// otherwise kill it instead of failing the operation. connect checks.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace stride::dist {

struct ShardGroupOptions {
  int rank = 0;
  int world = 1;
  std::string rendezvous;           // file:/dir or redis://host[:port] (rendezvous.h)
  // Keys of this group in the store: a new prefix for every start of a
  // shard set, since a store keeps the addresses of ranks long gone.
  std::string prefix = "stride";
  std::string listen_host = "127.0.0.1";  // the address peers reach this rank at
  std::chrono::milliseconds timeout{30000};  // connect and every operation
};

class ShardGroup {
  struct Private {};

 public:
  ShardGroup(Private, const ShardGroupOptions& opts);
  ~ShardGroup();
  ShardGroup(const ShardGroup&) = delete;
  ShardGroup& operator=(const ShardGroup&) = delete;

  // Waits (up to opts.timeout) until all opts.world ranks have joined.
  static Expected<std::unique_ptr<ShardGroup>> connect(const ShardGroupOptions& opts);

  int rank() const { return rank_; }
  int world() const { return world_; }
  // False once an operation failed: every later one fails at once.
  bool ok() const { return broken_.ok(); }
  int next_rank() const { return (rank_ + 1) % world_; }
  int prev_rank() const { return (rank_ + world_ - 1) % world_; }

  // Point to point: both sides give the same tag and size.
  Status send(int peer, const void* data, size_t bytes, uint32_t tag);
  Status recv(int peer, void* data, size_t bytes, uint32_t tag);

  // One step of a ring: send `bytes` to next_rank() and receive as many from
  // prev_rank(). Started, then finished, so the caller computes in between;
  // both buffers must live and stay untouched until finish returns.
  Status ring_pass_start(const void* send, void* recv, size_t bytes) {
    return ring_pass_start(send, bytes, recv, bytes);
  }
  // The same with sizes of their own (both sides agree on each); 0 leaves that side out.
  Status ring_pass_start(const void* send, size_t send_bytes, void* recv, size_t recv_bytes);
  Status ring_pass_finish();

  // Element-wise over all ranks, in place: x: [n].
  Status allreduce_max(float* x, size_t n);
  Status allreduce_sum(float* x, size_t n);
  Status allreduce_max(int64_t* x, size_t n);
  // root's `bytes` copied into every rank's data.
  Status broadcast(void* data, size_t bytes, int root);
  // Every rank's `bytes` to root, in rank order: all: [world * bytes], root only.
  Status gather(const void* data, size_t bytes, void* all, int root);

  // Payload this rank has handed to its peers so far: a send or ring pass
  // counts its bytes, a gather its bytes on a non-root rank, a broadcast its
  // bytes once per receiver on the root, an allreduce its values once. The
  // transport's framing and an algorithm's extra hops are not counted.
  int64_t payload_bytes_sent() const { return payload_bytes_sent_; }

 private:
  // Runs one Gloo call, turning what it throws into an IoError naming `what`.
  template <class F>
  Status guarded(const char* what, F&& f);
  uint64_t next_p2p_slot(uint32_t tag) const;

  int rank_ = 0;
  int world_ = 1;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::Context> context_;  // Gloo's collectives take it shared
  Status broken_;
  uint32_t collective_tag_ = 0;
  uint64_t ring_step_ = 0;
  bool ring_pending_ = false;  // between ring_pass_start and ring_pass_finish
  int64_t payload_bytes_sent_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> ring_send_, ring_recv_;
};

}  // namespace stride::dist

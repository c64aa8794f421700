#pragma once
// A prefix-KV tier shared by replicas (Redis: src/redis/). Full prefix pages
// are published under a keyed chained hash (shared_page_codec.h) as page
// images of every layer; a replica that misses locally asks the store for the
// prompt's next pages before computing them. The store is a cache: any
// answer may be missing, late or wrong, and the KV manager checks each value
// (checksum, identity, tokens) before it uses it, so the tier can only save
// work, never change an output.
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stride {

// Read by /metrics from any thread (serving/kv_metrics.h: stride_kv_shared_tier_*).
struct SharedTierCounters {
  std::atomic<int64_t> up{0};         // 1 while the store answers
  std::atomic<int64_t> hits{0};       // pages imported from the store
  std::atomic<int64_t> misses{0};     // pages asked for and not found
  std::atomic<int64_t> errors{0};     // connection errors, timeouts, corrupt or foreign values
  std::atomic<int64_t> published{0};  // pages written to the store
  std::atomic<int64_t> dropped{0};    // pages not published: the queue was full or the store down
  std::atomic<int64_t> bytes_in{0};   // value bytes read
  std::atomic<int64_t> bytes_out{0};  // value bytes written
};

class SharedPageStore {
 public:
  virtual ~SharedPageStore() = default;

  // The values of the longest run of `keys`, from the first, that the store
  // holds (empty when it holds the first one not, or is down). Bounded in
  // time by the store's lookup timeout; never blocks on a store known down.
  virtual std::vector<std::string> lookup_prefix(std::span<const std::string> keys) = 0;
  // Queues one value for writing in the background; drops it (counted) when
  // the queue is full.
  virtual void publish(std::string key, std::string value) = 0;
  // A value failed verification: counted as an error and removed from the
  // store (in the background) so no replica reads it again.
  virtual void reject(const std::string& key) = 0;

  virtual SharedTierCounters& counters() = 0;
  // For logs and `stride info`: the address without its password.
  virtual std::string describe() const = 0;
};

}  // namespace stride

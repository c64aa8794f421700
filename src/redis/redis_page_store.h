#pragma once
// The Redis implementation of SharedPageStore (redis_tier.h says how it
// behaves when Redis is slow or down). Built only with hiredis.
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis/redis_connection.h"
#include "redis/redis_tier.h"

namespace stride {

class RedisPageStore : public SharedPageStore {
 public:
  explicit RedisPageStore(RedisTierOptions options);
  ~RedisPageStore() override;

  std::vector<std::string> lookup_prefix(std::span<const std::string> keys) override;
  void publish(std::string key, std::string value) override;
  void reject(const std::string& key) override;
  SharedTierCounters& counters() override { return counters_; }
  std::string describe() const override { return "redis://" + options_.address.display(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Write {
    std::string key;
    std::string value;  // empty: DEL the key
  };
  void run();  // the background thread
  bool connect_publisher();
  void write_batch(std::vector<Write>& batch);
  // The tier stopped answering: gauge 0, logged once per outage.
  void went_down(const std::string& reason);
  void enqueue(Write w);
  void lookup_failed(const std::string& reason);  // the caller's thread

  RedisTierOptions options_;
  SharedTierCounters counters_;
  // The caller's (lookup) thread only.
  std::unique_ptr<RedisConnection> lookup_conn_;
  int64_t lookup_generation_ = 0;
  Clock::time_point lookup_retry_at_{};
  std::atomic<int64_t> generation_{0};  // publisher connections made
  std::atomic<bool> recheck_{false};    // a lookup failed: PING now

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Write> queue_;
  int64_t queued_bytes_ = 0;
  bool stopping_ = false;
  bool down_logged_ = false;  // guarded by mu_
  std::unique_ptr<RedisConnection> publish_conn_;  // the background thread only
  std::thread thread_;
};

}  // namespace stride

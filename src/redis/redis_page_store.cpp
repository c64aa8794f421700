#include "redis/redis_page_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>

namespace stride {

namespace {

constexpr auto kIdlePing = std::chrono::seconds(1);
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);
constexpr auto kMaxBackoff = std::chrono::seconds(5);
constexpr size_t kWriteBatchBytes = size_t(8) << 20;
constexpr auto kLookupPause = std::chrono::seconds(1);  // after a failed lookup, none for this long

}  // namespace

RedisPageStore::RedisPageStore(RedisTierOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

RedisPageStore::~RedisPageStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RedisPageStore::went_down(const std::string& reason) {
  const bool was_up = counters_.up.exchange(0) != 0;
  ++counters_.errors;
  bool log_it = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_it = was_up || !down_logged_;
    down_logged_ = true;
    // Pages waiting for a Redis that is gone are dropped, not kept for later.
    counters_.dropped += (int64_t)queue_.size();
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (log_it && options_.log)
    options_.log(true, "shared KV tier " + describe() + " down, serving from the local cache: " + reason);
}

void RedisPageStore::lookup_failed(const std::string& reason) {
  ++counters_.errors;
  lookup_conn_.reset();
  lookup_retry_at_ = Clock::now() + kLookupPause;
  (void)reason;  // the background thread's check logs the outage, once
  // The background thread checks Redis now and takes the gauge down if it is.
  recheck_ = true;
  cv_.notify_one();
}

std::vector<std::string> RedisPageStore::lookup_prefix(std::span<const std::string> keys) {
  std::vector<std::string> found;
  if (keys.empty() || !counters_.up || Clock::now() < lookup_retry_at_) return found;
  // A new publisher connection means Redis came back: an older lookup
  // connection may point at the process that went away.
  const int64_t generation = generation_;
  if (!lookup_conn_ || lookup_generation_ != generation) {
    auto conn = RedisConnection::open(options_.address, options_.lookup_timeout, options_.lookup_timeout);
    if (!conn) {
      lookup_failed(conn.status().message());
      return found;
    }
    lookup_conn_ = std::move(*conn);
    lookup_generation_ = generation;
  }
  const size_t batch = (size_t)std::max(1, options_.lookup_batch);
  for (size_t at = 0; at < keys.size(); at += batch) {
    RedisConnection::Command mget{"MGET"};
    for (size_t i = at; i < std::min(keys.size(), at + batch); ++i) mget.push_back(keys[i]);
    auto replies = lookup_conn_->pipeline({mget});
    if (!replies) {
      lookup_failed(replies.status().message());
      return found;
    }
    const redisReply& r = *(*replies)[0];
    if (r.type != REDIS_REPLY_ARRAY || r.elements != mget.size() - 1) {
      ++counters_.errors;
      return found;
    }
    for (size_t i = 0; i < r.elements; ++i) {
      const redisReply& v = *r.element[i];
      if (v.type != REDIS_REPLY_STRING) {
        counters_.misses += (int64_t)(keys.size() - found.size());
        return found;
      }
      counters_.bytes_in += (int64_t)v.len;
      found.emplace_back(v.str, v.len);
    }
  }
  return found;
}

void RedisPageStore::enqueue(Write w) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t bytes = (int64_t)(w.key.size() + w.value.size());
    if (queued_bytes_ + bytes > options_.queue_bytes) {
      ++counters_.dropped;
      return;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(w));
  }
  cv_.notify_one();
}

void RedisPageStore::publish(std::string key, std::string value) {
  if (!counters_.up) {
    ++counters_.dropped;
    return;
  }
  enqueue({std::move(key), std::move(value)});
}

void RedisPageStore::reject(const std::string& key) {
  ++counters_.errors;
  if (options_.log) options_.log(false, "shared KV tier: a damaged or foreign value was ignored and deleted");
  if (counters_.up) enqueue({key, {}});
}

bool RedisPageStore::connect_publisher() {
  auto conn = RedisConnection::open(options_.address, options_.publish_timeout, options_.publish_timeout);
  if (conn) {
    auto pong = (*conn)->pipeline({{"PING"}});
    if (pong && !redis_reply_is_error(*(*pong)[0])) {
      publish_conn_ = std::move(*conn);
      return true;
    }
    went_down(pong ? redis_reply_text(*(*pong)[0]) : pong.status().message());
    return false;
  }
  went_down(conn.status().message());
  return false;
}

void RedisPageStore::write_batch(std::vector<Write>& batch) {
  const std::string ttl = std::to_string(options_.ttl_seconds);
  std::vector<RedisConnection::Command> cmds;
  for (const Write& w : batch) {
    if (w.value.empty()) {
      cmds.push_back({"DEL", w.key});
    } else if (options_.ttl_seconds > 0) {
      cmds.push_back({"SET", w.key, w.value, "EX", ttl});
    } else {
      cmds.push_back({"SET", w.key, w.value});
    }
  }
  auto replies = publish_conn_->pipeline(cmds);
  if (!replies) {
    publish_conn_.reset();
    counters_.dropped += (int64_t)batch.size();
    went_down(replies.status().message());
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].value.empty()) continue;
    if (redis_reply_is_error(*(*replies)[i])) {
      // maxmemory with a noeviction policy, say: this page is not shared.
      ++counters_.errors;
      ++counters_.dropped;
      continue;
    }
    ++counters_.published;
    counters_.bytes_out += (int64_t)batch[i].value.size();
  }
}

void RedisPageStore::run() {
  auto backoff = std::chrono::duration_cast<Clock::duration>(kFirstBackoff);
  Clock::time_point next_connect = Clock::now();
  Clock::time_point last_io = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!publish_conn_) {
      if (Clock::now() < next_connect) {
        cv_.wait_until(lock, next_connect, [&] { return stopping_; });
        continue;
      }
      lock.unlock();
      const bool ok = connect_publisher();
      lock.lock();
      if (ok) {
        backoff = kFirstBackoff;
        last_io = Clock::now();
        const bool was_down = down_logged_;
        down_logged_ = false;
        ++generation_;
        counters_.up = 1;
        if (options_.log)
          options_.log(false, std::string("shared KV tier ") + describe() + (was_down ? " back up" : " up"));
      } else {
        next_connect = Clock::now() + backoff;
        backoff = std::min<Clock::duration>(backoff * 2, kMaxBackoff);
      }
      continue;
    }
    cv_.wait_until(lock, last_io + kIdlePing, [&] { return stopping_ || !queue_.empty() || recheck_; });
    if (stopping_) break;
    const bool recheck = recheck_.exchange(false);
    std::vector<Write> batch;
    size_t batch_bytes = 0;
    while (!queue_.empty() && batch_bytes < kWriteBatchBytes) {
      batch_bytes += queue_.front().key.size() + queue_.front().value.size();
      queued_bytes_ -= (int64_t)(queue_.front().key.size() + queue_.front().value.size());
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    if (!batch.empty()) {
      write_batch(batch);
    } else if (recheck || Clock::now() >= last_io + kIdlePing) {
      auto pong = publish_conn_->pipeline({{"PING"}});
      if (!pong || redis_reply_is_error(*(*pong)[0])) {
        publish_conn_.reset();
        went_down(pong ? redis_reply_text(*(*pong)[0]) : pong.status().message());
      }
    }
    last_io = Clock::now();
    lock.lock();
    if (!publish_conn_) next_connect = Clock::now() + backoff;
  }
}

}  // namespace stride

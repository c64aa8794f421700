#include "http/request_threads.h"

#include <chrono>

namespace stride::server {

void RequestThreads::reap_locked(std::vector<std::thread>& out) {
  for (uint64_t id : finished_) {
    auto it = threads_.find(id);
    if (it == threads_.end()) continue;
    out.push_back(std::move(it->second));
    threads_.erase(it);
  }
  finished_.clear();
}

bool RequestThreads::spawn(std::function<void()> fn) {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_locked(done);
    if ((int)threads_.size() >= max_threads_) {
      for (auto& t : done) t.join();
      return false;
    }
    const uint64_t id = next_id_++;
    threads_.emplace(id, std::thread([this, id, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> lock(mu_);
      finished_.push_back(id);
      cv_.notify_all();
    }));
  }
  for (auto& t : done) t.join();  // they have returned from fn already
  return true;
}

int RequestThreads::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (int)(threads_.size() - finished_.size());
}

bool RequestThreads::wait_idle(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return threads_.size() == finished_.size(); });
}

void RequestThreads::join_all() {
  std::map<uint64_t, std::thread> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(threads_);
    finished_.clear();
  }
  for (auto& [id, t] : all) {
    if (t.joinable()) t.join();
  }
}

}  // namespace stride::server

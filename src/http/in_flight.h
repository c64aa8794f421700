#pragma once
// How many requests the HTTP server is handling (from a complete request to
// the last byte of its response), capped: beyond the cap a request is refused
// with 503. Graceful shutdown waits here until every one is done.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

namespace stride::server {

class InFlight {
 public:
  explicit InFlight(int cap) : cap_(cap) {}

  // One request, counted while it lives.
  class Ticket {
   public:
    ~Ticket() {
      if (owner_) owner_->release();
    }
    Ticket(Ticket&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)) {}
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;

   private:
    friend class InFlight;
    explicit Ticket(InFlight& owner) : owner_(&owner) {}
    InFlight* owner_;
  };

  // nullopt at the cap.
  std::optional<Ticket> acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ >= cap_) return std::nullopt;
    ++running_;
    return Ticket(*this);
  }
  // Waits until none runs; false if some still run after `timeout_ms` (< 0: no limit).
  bool wait_idle(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    if (timeout_ms < 0) {
      cv_.wait(lock, [&] { return running_ == 0; });
      return true;
    }
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return running_ == 0; });
  }
  int running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }

 private:
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    cv_.notify_all();
  }

  const int cap_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
};

}  // namespace stride::server

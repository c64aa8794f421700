#pragma once
// Whether a request may start: the model is loaded, the server is not
// draining, the client is within rate_limit_rpm and max_requests_per_key, and
// the scheduler's queue has room. Decided once here for every front end; each
// maps a Refusal to its own error (HTTP status + code + Retry-After, gRPC code).
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/status.h"
#include "serving/config.h"
#include "serving/request.h"

namespace stride::serving {

class Scheduler;
class EncoderService;

// Why a request was not admitted. The messages and codes are what clients
// see (HTTP error bodies, gRPC status messages), so they stay as they are.
struct Refusal {
  enum class Reason { kNotReady, kDraining, kRateLimited, kTooManyInFlight, kQueueFull, kUnavailable };
  Reason reason = Reason::kUnavailable;
  std::string code;          // the API's error code: "not_ready", "rate_limit_exceeded", ...
  std::string message;
  double retry_after_s = 0;  // > 0: a retry after this long may succeed (HTTP Retry-After)

  // The client is over a limit or the queue is full (HTTP 429, gRPC
  // RESOURCE_EXHAUSTED); otherwise the server cannot serve now (503, UNAVAILABLE).
  bool exhausted() const {
    return reason == Reason::kRateLimited || reason == Reason::kTooManyInFlight || reason == Reason::kQueueFull;
  }
};

class Admission {
 public:
  explicit Admission(const ServeConfig& cfg) : cfg_(cfg) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  void set_ready() { ready_ = true; }
  void set_draining() { draining_ = true; }
  bool ready() const { return ready_.load(); }
  bool draining() const { return draining_.load(); }

  // nullopt: admitted. `model_loaded`: the caller holds a model to serve with.
  std::optional<Refusal> check_ready(bool model_loaded) const;
  std::optional<Refusal> check_draining() const;
  // Takes one token from `who`'s bucket (an API key id, or the client IP
  // without keys); refused when the caller is over rate_limit_rpm.
  std::optional<Refusal> take_rate_token(const std::string& who);

  // A generation counted against its key's max_requests_per_key while it lives.
  class Slot {
   public:
    Slot(Admission& admission, std::string who);
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool held() const { return held_; }
    // too_many_requests when the key was at its cap; nullopt when held.
    std::optional<Refusal> refusal() const;

   private:
    Admission& admission_;
    std::string who_;
    bool held_ = false;
  };

  // Submits `ch`; a refusal when the queue is full or the service is stopping.
  std::optional<Refusal> submit(Scheduler& scheduler, std::shared_ptr<RequestChannel> ch);
  std::optional<Refusal> submit(EncoderService& encoder, std::shared_ptr<RequestChannel> ch);
  // What a submit's Status means to the client: ResourceExhausted is a full
  // queue (queue_full), anything else unavailable; nullopt for Ok.
  static std::optional<Refusal> refusal_for_submit(const Status& st);

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point last;
  };
  const ServeConfig& cfg_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::mutex inflight_mu_;
  std::map<std::string, int> inflight_;  // running + queued generations per key
  std::mutex rate_mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace stride::serving

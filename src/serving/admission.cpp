#include "serving/admission.h"

#include <algorithm>
#include <chrono>

#include "serving/encoder_service.h"
#include "serving/scheduler.h"

namespace stride::serving {

std::optional<Refusal> Admission::check_ready(bool model_loaded) const {
  if (ready_ && model_loaded) return std::nullopt;
  return Refusal{Refusal::Reason::kNotReady, "not_ready", "the model is still loading"};
}

std::optional<Refusal> Admission::check_draining() const {
  if (!draining_) return std::nullopt;
  return Refusal{Refusal::Reason::kDraining, "draining", "the server is shutting down"};
}

std::optional<Refusal> Admission::take_rate_token(const std::string& who) {
  if (cfg_.rate_limit_rpm <= 0) return std::nullopt;
  const double per_s = cfg_.rate_limit_rpm / 60.0;
  const double burst = std::max(1.0, cfg_.rate_limit_rpm / 60.0 * 10);  // ten seconds' worth
  const auto now = Clock::now();
  double retry_after_s = 0;
  {
    std::lock_guard<std::mutex> lock(rate_mu_);
    auto [it, fresh] = buckets_.try_emplace(who, Bucket{burst, now});
    Bucket& b = it->second;
    b.tokens = std::min(burst, b.tokens + std::chrono::duration<double>(now - b.last).count() * per_s);
    b.last = now;
    if (b.tokens >= 1.0) {
      b.tokens -= 1.0;
      return std::nullopt;
    }
    retry_after_s = (1.0 - b.tokens) / per_s;  // > 0: tokens < 1 here
  }
  return Refusal{Refusal::Reason::kRateLimited, "rate_limit_exceeded",
                 "rate limit exceeded (" + std::to_string((int)cfg_.rate_limit_rpm) + " requests/minute)",
                 retry_after_s};
}

Admission::Slot::Slot(Admission& admission, std::string who) : admission_(admission), who_(std::move(who)) {
  const int cap = admission_.cfg_.max_requests_per_key;
  std::lock_guard<std::mutex> lock(admission_.inflight_mu_);
  int& n = admission_.inflight_[who_];
  if (cap > 0 && n >= cap) return;
  ++n;
  held_ = true;
}

Admission::Slot::~Slot() {
  std::lock_guard<std::mutex> lock(admission_.inflight_mu_);
  auto it = admission_.inflight_.find(who_);
  if (it == admission_.inflight_.end()) return;
  if (held_) --it->second;
  if (it->second <= 0) admission_.inflight_.erase(it);  // keys come and go; the map stays small
}

std::optional<Refusal> Admission::Slot::refusal() const {
  if (held_) return std::nullopt;
  // Fairness: one key (or address) cannot fill the queue for everyone.
  return Refusal{Refusal::Reason::kTooManyInFlight, "too_many_requests",
                 "too many requests in flight for this key (max_requests_per_key: " +
                     std::to_string(admission_.cfg_.max_requests_per_key) + ")",
                 1.0};
}

std::optional<Refusal> Admission::submit(Scheduler& scheduler, std::shared_ptr<RequestChannel> ch) {
  return refusal_for_submit(scheduler.submit(std::move(ch)));
}

std::optional<Refusal> Admission::submit(EncoderService& encoder, std::shared_ptr<RequestChannel> ch) {
  return refusal_for_submit(encoder.submit(std::move(ch)));
}

std::optional<Refusal> Admission::refusal_for_submit(const Status& st) {
  if (st.ok()) return std::nullopt;
  if (st.code() == StatusCode::kResourceExhausted) {
    return Refusal{Refusal::Reason::kQueueFull, "queue_full", st.message(), 1.0};
  }
  return Refusal{Refusal::Reason::kUnavailable, "unavailable", st.message()};
}

}  // namespace stride::serving

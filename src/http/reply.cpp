#include "http/reply.h"

#include <boost/asio/post.hpp>
#include <chrono>

#include "http/error_body.h"
#include "http/http_session.h"
#include "http/log.h"

namespace stride::server {

namespace net = boost::asio;

namespace {

// How often a request in flight looks whether its client is still there:
// a client that hung up is noticed soon, tokens flowing or not, and the
// scheduler frees its pages at its next step.
constexpr std::chrono::milliseconds kWatchEvery{50};

const char* const kInternalError = "internal error while handling the request";

}  // namespace

Reply::Reply(std::shared_ptr<ResponseSink> sink, net::any_io_executor strand, SessionContext& ctx,
             HttpRequest request, bool keep_alive, std::string client_ip, InFlight::Ticket ticket)
    : sink_(std::move(sink)),
      strand_(std::move(strand)),
      ctx_(ctx),
      request_(std::move(request)),
      res_(request_.version(), keep_alive, std::move(client_ip)),
      ticket_(std::move(ticket)),
      watch_(strand_) {}

// Torn down mid-request only when the network stops: the scheduler lets go.
Reply::~Reply() {
  if (channel_) {
    channel_->set_notify(nullptr);
    channel_->cancel();
  }
}

void Reply::start() {
  net::post(ctx_.workers, [self = shared_from_this()] { self->run_handler(); });
}

bool Reply::guarded(const std::function<void()>& fn) {
  try {
    fn();
    return true;
  } catch (const std::exception& e) {
    log(LogLevel::Error, "request handler failed", {{"error", e.what()}, {"client", res_.client_ip()}});
  } catch (...) {
    log(LogLevel::Error, "request handler failed", {{"client", res_.client_ip()}});
  }
  return false;
}

// On a worker thread; nothing on the strand touches res_ until after_handler.
void Reply::run_handler() {
  failure_ = !guarded([&] { ctx_.handler(request_, res_); });
  net::post(strand_, [self = shared_from_this()] { self->after_handler(); });
}

void Reply::after_handler() {
  answering_ = true;
  channel_ = res_.take_channel();
  relay_ = res_.take_relay();
  if (failure_ || !channel_ || !relay_) {
    if (channel_) channel_->cancel();
    channel_.reset();
    relay_.reset();
    if (!res_.started()) {
      res_.send(500, "application/json", error_body(500, failure_ ? kInternalError : "no response").dump());
    } else if (failure_ && res_.streaming()) {
      res_.end_stream();
    }
  } else {
    // The scheduler's thread only posts; the batch is taken on the strand.
    channel_->set_notify([weak = weak_from_this(), strand = strand_] {
      net::post(strand, [weak] {
        if (auto self = weak.lock()) self->pump();
      });
    });
    watch();
  }
  pump();
}

void Reply::pump() {
  if (!answering_ || writing_ || off_strand_ || ended_) return;
  if (relay_) {
    if (!res_.failed()) feed();
    if (off_strand_) return;
    if (relay_ && res_.failed()) client_gone();
  }
  out_ = res_.take_output();
  if (!out_.empty() && !res_.failed()) {
    writing_ = true;
    sink_->write(out_, [self = shared_from_this()](bool ok) { self->on_written(ok); });
    return;
  }
  if (!relay_) end();  // else: more events to come
}

void Reply::on_written(bool ok) {
  writing_ = false;
  out_.clear();
  if (!ok) res_.set_failed();
  pump();
}

void Reply::feed() {
  for (serving::Event& ev : channel_->take_all()) {
    bool more = true;
    if (!guarded([&] { more = relay_->on_event(ev, res_); })) return relay_failed();
    // After an error, what still runs for the request (its other choices) stops.
    if (!more && ev.kind == serving::EventKind::Error) channel_->cancel();
    if (!more) return relay_done();
  }
}

void Reply::relay_done() {
  stop_relay();
  if (!relay_->finishes_off_strand()) {
    relay_.reset();
    return;
  }
  off_strand_ = true;
  net::post(ctx_.workers, [self = shared_from_this()] {
    if (!self->guarded([&] { self->relay_->finish(self->res_); })) self->failure_ = true;
    net::post(self->strand_, [self] {
      self->off_strand_ = false;
      self->relay_.reset();
      if (self->failure_ && !self->res_.started()) {
        self->res_.send(500, "application/json", error_body(500, kInternalError).dump());
      }
      self->pump();
    });
  });
}

void Reply::relay_failed() {
  failure_ = true;
  channel_->cancel();
  stop_relay();
  relay_.reset();
  if (!res_.started()) res_.send(500, "application/json", error_body(500, kInternalError).dump());
  else if (res_.streaming()) res_.end_stream();
}

void Reply::client_gone() {
  channel_->cancel();
  stop_relay();
  relay_->on_client_gone();
  relay_.reset();
}

void Reply::stop_relay() {
  channel_->set_notify(nullptr);
  channel_.reset();
  watch_.cancel();
}

void Reply::watch() {
  watch_.expires_after(kWatchEvery);
  watch_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || !self->relay_ || self->off_strand_) return;
    if (self->sink_->peer_reset()) self->res_.set_failed();
    else if (self->sink_->peer_half_closed()) self->res_.probe();
    self->pump();
    if (self->relay_ && !self->off_strand_) self->watch();
  });
}

void Reply::end() {
  ended_ = true;
  ticket_.reset();
  if (auto epilogue = res_.take_epilogue()) guarded([&] { epilogue->done(res_); });
  const bool reuse = res_.keep_alive() && !res_.failed() && !failure_;
  sink_->reply_done(reuse);
}

}  // namespace stride::server

#pragma once
// One request being answered, from its complete arrival to the last byte of
// its response. The handler runs on a worker thread (it parses, validates and
// submits: work that may take a while on a huge prompt or a model switch, so
// it stays off the network threads) and leaves its bytes in the Responder.
// Everything after runs on the connection's strand: the bytes are written
// asynchronously; a handler that submitted to the scheduler leaves an
// EventRelay, which the scheduler's events reach through the channel's
// notification, batch by batch, the next batch only once the previous write
// completed (a slow client holds events back in the channel, coalesced,
// instead of queueing writes). No thread waits on the scheduler.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http/in_flight.h"
#include "http/responder.h"

namespace stride::server {

struct SessionContext;

// The connection a reply writes to; implemented by the session, used on its strand.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Writes `bytes` (alive until `done`), bounded by the write timeout; `done(ok)` runs on the strand.
  virtual void write(const std::string& bytes, std::function<void(bool ok)> done) = 0;
  // Non-blocking looks at the socket, which nothing reads while a request runs.
  virtual bool peer_reset() = 0;
  virtual bool peer_half_closed() = 0;
  // The response is over; `reuse`: read the connection's next request, else close it.
  virtual void reply_done(bool reuse) = 0;
};

class Reply : public std::enable_shared_from_this<Reply> {
 public:
  Reply(std::shared_ptr<ResponseSink> sink, boost::asio::any_io_executor strand, SessionContext& ctx,
        HttpRequest request, bool keep_alive, std::string client_ip, InFlight::Ticket ticket);
  ~Reply();
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  // Runs the handler on a worker, then answers on the strand.
  void start();

 private:
  void run_handler();
  void after_handler();
  void pump();
  void feed();
  void relay_done();
  void relay_failed();
  void client_gone();
  void stop_relay();
  void on_written(bool ok);
  void watch();
  void end();
  // Runs `fn`; an exception is logged and returned as false, so a bug fails
  // its request only.
  bool guarded(const std::function<void()>& fn);

  std::shared_ptr<ResponseSink> sink_;  // keeps the connection while its request runs
  boost::asio::any_io_executor strand_;
  SessionContext& ctx_;
  const HttpRequest request_;
  Responder res_;
  std::optional<InFlight::Ticket> ticket_;  // released when the response is over
  std::shared_ptr<serving::RequestChannel> channel_;
  std::unique_ptr<EventRelay> relay_;
  boost::asio::steady_timer watch_;
  std::string out_;         // being written
  bool failure_ = false;    // the handler or relay threw
  bool answering_ = false;  // the handler returned: the strand owns res_
  bool writing_ = false;
  bool off_strand_ = false;  // relay_->finish() runs on a worker
  bool ended_ = false;
};

}  // namespace stride::server

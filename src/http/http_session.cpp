#include "http/http_session.h"

#include <poll.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <type_traits>

#include "http/error_body.h"
#include "http/log.h"
#include "http/reply.h"

namespace stride::server {

namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::string error_json(int http_status, const char* message, const char* code = "") {
  return error_body(http_status, message, "", code).dump();
}

template <bool kTls>
class Session final : public ResponseSink, public Closable, public std::enable_shared_from_this<Session<kTls>> {
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

 public:
  Session(tcp::socket&& socket, uint64_t id, std::string ip, net::ssl::context* tls, SessionContext& ctx)
      : stream_(make_stream(std::move(socket), tls)), id_(id), ip_(std::move(ip)), ctx_(ctx) {
    fd_ = lowest().socket().native_handle();
    error_code ec;
    lowest().socket().set_option(tcp::no_delay(true), ec);
  }
  ~Session() override { ctx_.registry.remove(id_); }

  void run() { net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->begin(); }); }

  void close_if_idle() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->idle_) self->close();
    });
  }

  // ResponseSink: on the strand, while a reply runs.
  void write(const std::string& bytes, std::function<void(bool ok)> done) override {
    if (closed_) return net::post(stream_.get_executor(), [done = std::move(done)] { done(false); });
    lowest().expires_after(seconds(ctx_.opts.write_timeout_s));
    net::async_write(stream_, net::buffer(bytes), [self = self(), done = std::move(done)](error_code ec, std::size_t) {
      self->lowest().expires_never();  // the request may run a long time before its next write
      done(!ec);
    });
  }
  // While a request runs nothing reads the socket, and it is closed only
  // after its reply, so polling the descriptor is safe.
  bool peer_reset() override { return poll_events() & (POLLHUP | POLLERR); }
  bool peer_half_closed() override { return poll_events() & POLLRDHUP; }
  void reply_done(bool reuse) override { reuse ? read_request() : close(); }

 private:
  static Stream make_stream(tcp::socket&& socket, net::ssl::context* tls) {
    if constexpr (kTls) return Stream(std::move(socket), *tls);
    else return Stream(std::move(socket));
  }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
  auto self() { return this->shared_from_this(); }

  short poll_events() {
    pollfd p{fd_, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 ? p.revents : 0;
  }

  void begin() {
    if constexpr (kTls) {
      lowest().expires_after(seconds(ctx_.opts.header_timeout_s));
      stream_.async_handshake(net::ssl::stream_base::server, [self = self()](error_code ec) {
        if (ec) return self->close();  // e.g. plain HTTP sent to the HTTPS port
        self->read_request();
      });
    } else {
      read_request();
    }
  }

  void read_request() {
    idle_ = true;
    ctx_.registry.set_idle(id_, true);
    if (ctx_.stopping.load() || closed_) return close();
    parser_.emplace();
    parser_->body_limit(ctx_.opts.max_body_bytes);
    parser_->header_limit((std::uint32_t)ctx_.opts.max_header_bytes);
    lowest().expires_after(seconds(served_ == 0 ? ctx_.opts.header_timeout_s : ctx_.opts.idle_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = self()](error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(error_code ec) {
    if (ec) return on_read_error(ec);
    idle_ = false;
    ctx_.registry.set_idle(id_, false);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      interim_.emplace(http::status::continue_, req.version());
      lowest().expires_after(seconds(ctx_.opts.write_timeout_s));
      http::async_write(stream_, *interim_, [self = self()](error_code ec, std::size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    lowest().expires_after(seconds(ctx_.opts.body_timeout_s));
    http::async_read(stream_, buffer_, *parser_, [self = self()](error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(error_code ec) {
    if (ec) return on_read_error(ec);
    lowest().expires_never();
    ++served_;
    HttpRequest request = parser_->release();
    keep_alive_ = request.keep_alive() && !ctx_.stopping.load() && served_ < ctx_.opts.keepalive_max_requests;
    auto ticket = ctx_.in_flight.acquire();
    if (!ticket) return respond_and_close(503, error_json(503, "the server is handling too many requests", "busy"));
    auto reply = std::make_shared<Reply>(self(), stream_.get_executor(), ctx_, std::move(request), keep_alive_, ip_,
                                         std::move(*ticket));
    reply->start();
  }

  void on_read_error(error_code ec) {
    if (ec == http::error::body_limit) {
      return respond_and_close(413, error_json(413, "request body too large", "body_too_large"),
                               /*drain=*/true);
    }
    if (ec == http::error::header_limit) {
      return respond_and_close(431, error_json(431, "request headers too large"));
    }
    const bool parse_error = ec.category() == http::make_error_code(http::error::bad_method).category();
    const bool quiet = ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
                       ec == net::error::operation_aborted || ec == net::error::connection_reset ||
                       ec == http::error::partial_message;
    if (parse_error && !quiet && !closed_) {
      return respond_and_close(400, error_json(400, "malformed HTTP request"));
    }
    close();
  }

  // A response written from the network thread (no handler ran), then close.
  // `drain`: read what the client still sends, briefly, so that closing does
  // not reset the connection before it has read the answer.
  void respond_and_close(int status, std::string body, bool drain = false) {
    early_.emplace(static_cast<http::status>(status), parser_ ? parser_->get().version() : 11);
    early_->set(http::field::server, "stride");
    early_->set(http::field::content_type, "application/json");
    early_->keep_alive(false);
    early_->body() = std::move(body);
    early_->prepare_payload();
    lowest().expires_after(seconds(ctx_.opts.write_timeout_s));
    http::async_write(stream_, *early_, [self = self(), drain](error_code ec, std::size_t) {
      if (ec || !drain) return self->close();
      error_code ignored;
      self->lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      self->lowest().expires_after(std::chrono::seconds(1));
      self->drain_more(0);
    });
  }

  void drain_more(int64_t got) {
    if (got > (int64_t(64) << 20)) return close();
    lowest().async_read_some(net::buffer(drain_buf_), [self = self(), got](error_code ec, std::size_t n) {
      if (ec) return self->close();
      self->drain_more(got + (int64_t)n);
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    idle_ = false;
    error_code ec;
    lowest().expires_never();
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    lowest().close();
  }

  Stream stream_;
  const uint64_t id_;
  const std::string ip_;
  SessionContext& ctx_;
  int fd_ = -1;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::empty_body>> interim_;
  std::optional<http::response<http::string_body>> early_;
  std::array<char, 16384> drain_buf_;
  int served_ = 0;
  bool keep_alive_ = false;
  bool idle_ = true;     // waiting for a request (strand only)
  bool closed_ = false;  // strand only
};

}  // namespace

void start_session(tcp::socket socket, uint64_t id, std::string ip, net::ssl::context* tls, SessionContext& ctx) {
  if (tls) {
    auto s = std::make_shared<Session<true>>(std::move(socket), id, std::move(ip), tls, ctx);
    ctx.registry.attach(id, s);
    s->run();
  } else {
    auto s = std::make_shared<Session<false>>(std::move(socket), id, std::move(ip), nullptr, ctx);
    ctx.registry.attach(id, s);
    s->run();
  }
}

}  // namespace stride::server

#pragma once
// One connection's byte stream: plain TCP, or TLS (OpenSSL) over it. It meets
// Beast's SyncReadStream/SyncWriteStream, so http::read/write take either.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace stride::server {

// A TLS server context from PEM files; errors name the file and OpenSSL's reason.
Expected<std::unique_ptr<boost::asio::ssl::context>> make_tls_context(const std::string& cert_file,
                                                                      const std::string& key_file);

class ConnectionStream {
 public:
  using tcp = boost::asio::ip::tcp;
  // `tls` null: plain TCP.
  ConnectionStream(tcp::socket socket, boost::asio::ssl::context* tls) {
    if (tls) {
      tls_.emplace(std::move(socket), *tls);
    } else {
      plain_.emplace(std::move(socket));
    }
  }

  // Server side of the TLS handshake (no-op for plain TCP).
  void handshake(boost::system::error_code& ec) {
    if (tls_) tls_->handshake(boost::asio::ssl::stream_base::server, ec);
  }
  // TLS: sends close_notify without waiting for the peer's; then half-closes TCP.
  void shutdown();

  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  bool is_tls() const { return tls_.has_value(); }

  template <class Buffers>
  size_t read_some(const Buffers& b, boost::system::error_code& ec) {
    return tls_ ? tls_->read_some(b, ec) : plain_->read_some(b, ec);
  }
  template <class Buffers>
  size_t read_some(const Buffers& b) {
    return tls_ ? tls_->read_some(b) : plain_->read_some(b);
  }
  template <class Buffers>
  size_t write_some(const Buffers& b, boost::system::error_code& ec) {
    return tls_ ? tls_->write_some(b, ec) : plain_->write_some(b, ec);
  }
  template <class Buffers>
  size_t write_some(const Buffers& b) {
    return tls_ ? tls_->write_some(b) : plain_->write_some(b);
  }

 private:
  std::optional<tcp::socket> plain_;
  std::optional<boost::asio::ssl::stream<tcp::socket>> tls_;
};

}  // namespace stride::server

#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace stride::server {

namespace ssl = boost::asio::ssl;

namespace {

std::string openssl_reason(const boost::system::error_code& ec) {
  std::string why = ec.message();
  if (const unsigned long e = ERR_get_error(); e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    why += std::string(" (") + buf + ")";
  }
  ERR_clear_error();
  return why;
}

}  // namespace

Expected<std::unique_ptr<ssl::context>> make_tls_context(const std::string& cert_file, const std::string& key_file) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                   ec);
  if (ec) return Internal("TLS: cannot set context options: " + openssl_reason(ec));
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) return InvalidArgument("TLS: cannot load certificate " + cert_file + ": " + openssl_reason(ec));
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    const std::string why = openssl_reason(ec);
    if (why.find("mismatch") != std::string::npos) {
      return InvalidArgument("TLS: private key " + key_file + " does not match certificate " + cert_file);
    }
    return InvalidArgument("TLS: cannot load private key " + key_file + ": " + why);
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    return InvalidArgument("TLS: private key " + key_file + " does not match certificate " + cert_file);
  }
  return ctx;
}

}  // namespace stride::server

#pragma once
// The server's TLS context (OpenSSL), from PEM files.
#include <boost/asio/ssl.hpp>
#include <memory>
#include <string>

#include "core/status.h"

namespace stride::server {

// A TLS server context from PEM files; errors name the file and OpenSSL's reason.
Expected<std::unique_ptr<boost::asio::ssl::context>> make_tls_context(const std::string& cert_file,
                                                                      const std::string& key_file);

}  // namespace stride::server

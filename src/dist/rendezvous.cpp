#include "dist/rendezvous.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>
#ifdef STRIDE_WITH_HIREDIS
#include <gloo/rendezvous/redis_store.h>
#endif

#include <charconv>
#include <filesystem>

namespace stride::dist {

Expected<RendezvousAddress> parse_rendezvous(const std::string& text) {
  RendezvousAddress addr;
  if (text.starts_with("file:")) {
    addr.kind = RendezvousAddress::Kind::File;
    addr.path = text.substr(5);
    if (addr.path.empty()) return InvalidArgument("rendezvous '" + text + "': file: needs a directory");
    return addr;
  }
  if (text.starts_with("redis://")) {
    addr.kind = RendezvousAddress::Kind::Redis;
    const std::string rest = text.substr(8);
    const size_t colon = rest.rfind(':');
    addr.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string port = rest.substr(colon + 1);
      const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), addr.port);
      if (ec != std::errc() || end != port.data() + port.size() || addr.port <= 0 || addr.port > 65535)
        return InvalidArgument("rendezvous '" + text + "': bad port '" + port + "'");
    }
    if (addr.host.empty()) return InvalidArgument("rendezvous '" + text + "': redis:// needs a host");
    return addr;
  }
  return InvalidArgument("rendezvous '" + text + "': expected file:/dir or redis://host[:port]");
}

Expected<std::unique_ptr<gloo::rendezvous::Store>> open_rendezvous(const RendezvousAddress& addr) {
  if (addr.kind == RendezvousAddress::Kind::File) {
    std::error_code ec;
    if (!std::filesystem::is_directory(addr.path, ec))
      return NotFound("rendezvous directory " + addr.path + " does not exist");
    return std::unique_ptr<gloo::rendezvous::Store>(std::make_unique<gloo::rendezvous::FileStore>(addr.path));
  }
#ifndef STRIDE_WITH_HIREDIS
  return Unsupported("rendezvous redis://: stride was built without hiredis (libhiredis-dev)");
#else
  // RedisStore connects in its constructor and throws when it cannot.
  try {
    return std::unique_ptr<gloo::rendezvous::Store>(
        std::make_unique<gloo::rendezvous::RedisStore>(addr.host, addr.port));
  } catch (const gloo::Exception& e) {
    return IoError("rendezvous redis://" + addr.host + ":" + std::to_string(addr.port) + ": " + e.what());
  }
#endif
}

}  // namespace stride::dist

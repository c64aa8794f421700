#pragma once
// Where the ranks of a shard group find each other before they connect: a
// key-value store each rank writes its TCP address to and reads its peers'
// from. Either a directory every rank can reach (one host, or a shared file
// system) or a Redis server (hosts with nothing shared but the network).
//   file:/path/to/dir          (the directory must exist)
//   redis://host[:port]        (port 6379 when left out)
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace gloo::rendezvous {
class Store;
}

namespace stride::dist {

struct RendezvousAddress {
  enum class Kind { File, Redis } kind = Kind::File;
  std::string path;  // File: the directory
  std::string host;  // Redis
  int port = 6379;
};

Expected<RendezvousAddress> parse_rendezvous(const std::string& text);

// The store at addr; connecting to Redis can fail (IoError).
Expected<std::unique_ptr<gloo::rendezvous::Store>> open_rendezvous(const RendezvousAddress& addr);

}  // namespace stride::dist

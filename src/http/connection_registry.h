#pragma once
// Every open connection, by age, with its client address and whether it is
// idle (waiting for a request). Caps are enforced at accept: when the total or
// one address's count is at its cap, the oldest idle connection (of that
// address) is closed to make room, so idle or slow-sending connections can
// never lock out a client with a real request; a connection is refused only
// when everything is busy with requests.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stride::server {

// What the registry can do to a connection: close it if it is still idle.
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close_if_idle() = 0;
};

class ConnectionRegistry {
 public:
  ConnectionRegistry(int max_total, int max_per_ip) : max_total_(max_total), max_per_ip_(max_per_ip) {}

  // Admits a new connection from `ip`, evicting idle ones as needed; returns
  // its id, or 0 when it must be refused.
  uint64_t admit(const std::string& ip);
  void attach(uint64_t id, std::weak_ptr<Closable> conn);
  void set_idle(uint64_t id, bool idle);
  void remove(uint64_t id);
  // Closes every idle connection (shutdown); busy ones close after their request.
  void close_idle();
  int size() const;
  int evicted() const;

 private:
  struct Entry {
    std::string ip;
    bool idle = true;
    bool closing = false;  // asked to close; no longer counted
    std::weak_ptr<Closable> conn;
  };
  // The oldest idle entry (of `ip` when not empty), marked closing; null if none.
  std::shared_ptr<Closable> evict_locked(const std::string& ip);

  const int max_total_;
  const int max_per_ip_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Entry> entries_;  // by id = by age
  std::unordered_map<std::string, int> live_per_ip_;  // entries not closing
  int live_ = 0;
  int evicted_ = 0;
};

}  // namespace stride::server

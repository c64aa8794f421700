#include "http/connection_registry.h"

#include <vector>

namespace stride::server {

std::shared_ptr<Closable> ConnectionRegistry::evict_locked(const std::string& ip) {
  for (auto& [id, e] : entries_) {
    if (!e.idle || e.closing || (!ip.empty() && e.ip != ip)) continue;
    auto conn = e.conn.lock();
    if (!conn) continue;
    e.closing = true;
    --live_;
    --live_per_ip_[e.ip];
    ++evicted_;
    return conn;
  }
  return nullptr;
}

uint64_t ConnectionRegistry::admit(const std::string& ip) {
  std::vector<std::shared_ptr<Closable>> to_close;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool room = true;
    if (live_per_ip_[ip] >= max_per_ip_) {
      auto c = evict_locked(ip);
      room = c != nullptr;
      if (c) to_close.push_back(std::move(c));
    }
    if (room && live_ >= max_total_) {
      auto c = evict_locked("");
      room = c != nullptr;
      if (c) to_close.push_back(std::move(c));
    }
    if (room) {
      id = next_id_++;
      entries_[id] = Entry{ip, true, false, {}};
      ++live_;
      ++live_per_ip_[ip];
    }
  }
  for (auto& c : to_close) c->close_if_idle();  // outside the lock: it posts to the connection
  return id;
}

void ConnectionRegistry::attach(uint64_t id, std::weak_ptr<Closable> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.conn = std::move(conn);
}

void ConnectionRegistry::set_idle(uint64_t id, bool idle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.idle = idle;
}

void ConnectionRegistry::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.closing) {
    --live_;
    if (--live_per_ip_[it->second.ip] <= 0) live_per_ip_.erase(it->second.ip);
  } else if (live_per_ip_.count(it->second.ip) && live_per_ip_[it->second.ip] <= 0) {
    live_per_ip_.erase(it->second.ip);
  }
  entries_.erase(it);
}

void ConnectionRegistry::close_idle() {
  std::vector<std::shared_ptr<Closable>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, e] : entries_) {
      if (auto c = e.conn.lock()) conns.push_back(std::move(c));
    }
  }
  for (auto& c : conns) c->close_if_idle();
}

int ConnectionRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (int)entries_.size();
}

int ConnectionRegistry::evicted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_;
}

}  // namespace stride::server

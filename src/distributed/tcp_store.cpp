// TCPStore: a server thread in the master process holding the keys, and a blocking client per
// store object. A WAIT request is answered when its keys exist, so waiting costs no polling; a
// client that gives up on a wait reconnects (its late answer would otherwise arrive out of step).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "distributed/socket.h"
#include "distributed/store_common.h"
#include "ember/distributed/errors.h"
#include "ember/distributed/store.h"

namespace ember::distributed {
namespace {

enum Code : uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kCheck, kWait, kDelete, kNumKeys };
enum Reply : uint8_t { kOk = 0, kNotFound = 1, kFailed = 2 };

std::string as_string(const Bytes& b) { return std::string(b.begin(), b.end()); }
Bytes as_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

}  // namespace

class TCPStore::Server {
 public:
  explicit Server(int port) : listen_fd_(net::listen_on(port)) {
    if (::pipe2(wake_, O_CLOEXEC) != 0) throw DistNetworkError("TCPStore: pipe() failed");
    thread_ = std::thread([this] { serve(); });
  }
  ~Server() {
    stop_ = true;
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, _] : clients_) net::close_fd(fd);
    net::close_fd(listen_fd_);
    net::close_fd(wake_[0]);
    net::close_fd(wake_[1]);
  }
  int port() const { return net::bound_port(listen_fd_); }

 private:
  struct Waiter {
    int fd;
    std::vector<std::string> keys;
  };

  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (auto& [fd, _] : clients_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients_[fd];
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int fd = fds[i].fd;
        char chunk[65536];
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          drop(fd);
          continue;
        }
        std::string& buffer = clients_[fd];
        buffer.append(chunk, size_t(n));
        net::Message m;
        while (take_message(buffer, m)) handle(fd, m);
      }
    }
  }

  void drop(int fd) {
    clients_.erase(fd);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
    net::close_fd(fd);
  }

  void reply(int fd, uint8_t code, std::vector<std::string> parts = {}) {
    net::send_all(fd, net::encode({code, std::move(parts)}));
  }

  bool all_set(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data_.count(k) > 0; });
  }

  // A key changed: answer the waits it completes.
  void wake_waiters() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (all_set(it->keys)) {
        reply(it->fd, kOk);
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void handle(int fd, const net::Message& m) {
    try {
      handle_or_throw(fd, m);
    } catch (const std::exception& e) {  // a bad request (add on text) answers with the error
      reply(fd, kFailed, {e.what()});
    }
  }

  void handle_or_throw(int fd, const net::Message& m) {
    const auto& p = m.parts;
    switch (m.code) {
      case kSet:
        data_[p.at(0)] = p.at(1);
        reply(fd, kOk);
        wake_waiters();
        break;
      case kGet: {
        auto it = data_.find(p.at(0));
        if (it == data_.end()) reply(fd, kNotFound);
        else reply(fd, kOk, {it->second});
        break;
      }
      case kAdd: {
        auto it = data_.find(p.at(0));
        const int64_t now = (it == data_.end() ? 0 : parse_int(it->second, p.at(0))) + std::stoll(p.at(1));
        data_[p.at(0)] = std::to_string(now);
        reply(fd, kOk, {std::to_string(now)});
        wake_waiters();
        break;
      }
      case kCompareSet: {
        auto it = data_.find(p.at(0));
        if (it == data_.end()) {
          if (p.at(1).empty()) data_[p.at(0)] = p.at(2);
          reply(fd, kOk, {p.at(1).empty() ? p.at(2) : p.at(1)});
        } else {
          if (it->second == p.at(1)) it->second = p.at(2);
          reply(fd, kOk, {it->second});
        }
        wake_waiters();
        break;
      }
      case kCheck:
        reply(fd, kOk, {all_set(p) ? "1" : "0"});
        break;
      case kWait:
        if (all_set(p)) reply(fd, kOk);
        else waiters_.push_back({fd, p});
        break;
      case kDelete:
        reply(fd, kOk, {data_.erase(p.at(0)) ? "1" : "0"});
        break;
      case kNumKeys:
        reply(fd, kOk, {std::to_string(data_.size())});
        break;
      default:
        drop(fd);
    }
  }

  int listen_fd_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<int, std::string> clients_;  // fd -> bytes received and not yet parsed
  std::map<std::string, std::string> data_;
  std::vector<Waiter> waiters_;
};

class TCPStore::Client {
 public:
  Client(std::string host, int port, Millis timeout) : host_(std::move(host)), port_(port) {
    fd_ = net::connect_to(host_, port_, net::Clock::now() + timeout);
  }
  ~Client() { net::close_fd(fd_); }

  // One request and its answer; false when the deadline passed first (then reconnected).
  bool call(const net::Message& request, net::Message& answer, Millis timeout, const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!net::send_all(fd_, net::encode(request)))
      throw DistNetworkError(detail::cat("TCPStore::", what, ": the connection to ", host_, ":", port_,
                                         " is closed (did rank 0, which serves the store, exit?)"));
    if (net::recv_message(fd_, answer, net::Clock::now() + timeout)) {
      if (answer.code == kFailed) throw ValueError(answer.parts.at(0));
      return true;
    }
    net::close_fd(fd_);
    fd_ = net::connect_to(host_, port_, net::Clock::now() + timeout);
    return false;
  }

 private:
  std::string host_;
  int port_;
  int fd_ = -1;
  std::mutex mutex_;
};

TCPStore::TCPStore(const std::string& host, int port, bool is_master, Millis timeout, int world_size,
                   bool wait_for_workers)
    : Store(timeout), host_(host), port_(port) {
  EMBER_CHECK_VALUE(port >= 0 && port < 65536, "TCPStore: port must be in [0, 65535], got ", port);
  if (is_master) {
    server_ = std::make_unique<Server>(port);
    port_ = server_->port();
  } else {
    EMBER_CHECK_VALUE(port > 0, "TCPStore: a client needs the master's port, got 0");
  }
  client_ = std::make_unique<Client>(is_master ? "127.0.0.1" : host, port_, timeout);
  // Every process checks in; the master waits for world_size of them (torch's wait_for_workers).
  if (world_size > 0) {
    add("__ember_tcpstore_workers", 1);
    if (is_master && wait_for_workers) {
      const auto deadline = net::Clock::now() + timeout;
      for (;;) {
        const int64_t joined = add("__ember_tcpstore_workers", 0);
        if (joined >= world_size) break;
        if (net::Clock::now() >= deadline)
          throw DistStoreError(detail::cat("TCPStore: timed out after ", timeout.count(), " ms waiting for ", world_size,
                                           " workers to join (", joined, " did)"));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
}

TCPStore::~TCPStore() {
  client_.reset();
  server_.reset();
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  net::Message a;
  client_->call({kSet, {key, as_string(value)}}, a, timeout_, "set");
}

Bytes TCPStore::get(const std::string& key) {
  wait({key}, timeout_);
  net::Message a;
  client_->call({kGet, {key}}, a, timeout_, "get");
  if (a.code != kOk) throw DistStoreError(detail::cat("TCPStore::get: key '", key, "' was deleted while being read"));
  return as_bytes(a.parts.at(0));
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  net::Message a;
  client_->call({kAdd, {key, std::to_string(amount)}}, a, timeout_, "add");
  return std::stoll(a.parts.at(0));
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  net::Message a;
  client_->call({kCompareSet, {key, as_string(expected), as_string(desired)}}, a, timeout_, "compare_set");
  return as_bytes(a.parts.at(0));
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  net::Message a;
  client_->call({kCheck, keys}, a, timeout_, "check");
  return a.parts.at(0) == "1";
}

void TCPStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  net::Message a;
  if (!client_->call({kWait, keys}, a, timeout, "wait")) throw_wait_timeout("TCPStore", keys, timeout);
}

bool TCPStore::delete_key(const std::string& key) {
  net::Message a;
  client_->call({kDelete, {key}}, a, timeout_, "delete_key");
  return a.parts.at(0) == "1";
}

int64_t TCPStore::num_keys() {
  net::Message a;
  client_->call({kNumKeys, {}}, a, timeout_, "num_keys");
  return std::stoll(a.parts.at(0));
}

}  // namespace ember::distributed

#include "distributed/socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "ember/distributed/errors.h"

namespace ember::distributed::net {

int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw DistNetworkError(detail::cat("TCPStore: socket() failed: ", std::strerror(errno)));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(uint16_t(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 1024) != 0) {
    const int err = errno;
    ::close(fd);
    throw DistNetworkError(detail::cat("TCPStore: the server could not listen on port ", port, ": ", std::strerror(err),
                                       err == EADDRINUSE ? " (another process uses it: pick another MASTER_PORT)" : ""));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

int connect_to(const std::string& host, int port, Clock::time_point deadline) {
  std::string last = "no attempt";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last = detail::cat("cannot resolve the host: ", ::gai_strerror(rc));
    } else {
      for (addrinfo* a = res; a; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          ::freeaddrinfo(res);
          return fd;
        }
        last = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    if (Clock::now() >= deadline)
      throw DistNetworkError(detail::cat("TCPStore: could not connect to ", host, ":", port,
                                         " before the timeout (last error: ", last,
                                         "); is the master (rank 0) running and MASTER_ADDR/MASTER_PORT right?"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

namespace {
void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(s[at + i])) << (8 * i);
  return v;
}
}  // namespace

std::string encode(const Message& m) {
  std::string s;
  s.push_back(char(m.code));
  put_u32(s, uint32_t(m.parts.size()));
  for (const auto& p : m.parts) {
    put_u32(s, uint32_t(p.size()));
    s += p;
  }
  return s;
}

bool take_message(std::string& buffer, Message& out) {
  if (buffer.size() < 5) return false;
  const uint32_t n = get_u32(buffer, 1);
  size_t at = 5;
  std::vector<std::string> parts;
  parts.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (buffer.size() < at + 4) return false;
    const uint32_t len = get_u32(buffer, at);
    at += 4;
    if (buffer.size() < at + len) return false;
    parts.emplace_back(buffer, at, len);
    at += len;
  }
  out.code = uint8_t(buffer[0]);
  out.parts = std::move(parts);
  buffer.erase(0, at);
  return true;
}

bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

bool recv_message(int fd, Message& out, Clock::time_point deadline) {
  std::string buffer;
  char chunk[65536];
  for (;;) {
    if (take_message(buffer, out)) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, int(std::min<long long>(left, 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) return false;
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw DistNetworkError("TCPStore: the connection to the store's server was closed (did rank 0 exit?)");
    buffer.append(chunk, size_t(n));
  }
}

}  // namespace ember::distributed::net

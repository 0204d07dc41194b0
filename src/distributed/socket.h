#pragma once
// Blocking TCP sockets and the store's framing: a message is a one-byte code and a list of byte
// strings, each sent as a 4-byte little-endian length and its bytes.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::distributed::net {

using Clock = std::chrono::steady_clock;

struct Message {
  uint8_t code = 0;
  std::vector<std::string> parts;
};

// A listening socket on every interface; port 0 picks a free one (bound_port says which).
int listen_on(int port);
int bound_port(int fd);
// Connects to host:port, retrying until `deadline` (the other side may not listen yet); throws
// DistNetworkError naming the address and the last error when the deadline passes.
int connect_to(const std::string& host, int port, Clock::time_point deadline);
void close_fd(int fd);

std::string encode(const Message& m);
// Sends every byte; false when the peer is gone.
bool send_all(int fd, const std::string& bytes);
// One whole message, waiting until `deadline`: false on timeout (the stream is then out of step:
// reconnect), throws DistNetworkError when the peer closed the connection.
bool recv_message(int fd, Message& out, Clock::time_point deadline);
// Parses one message from the front of `buffer` when it holds a whole one (and removes it).
bool take_message(std::string& buffer, Message& out);

}  // namespace ember::distributed::net

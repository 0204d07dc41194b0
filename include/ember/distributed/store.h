#pragma once
// Key-value stores for rendezvous (torch.distributed's Store, TCPStore, FileStore, PrefixStore):
// the processes of a job meet here to trade addresses before the collectives' own connections
// exist. Values are bytes; get() and wait() block until the keys exist or the timeout passes
// (then a DistStoreError-like error says which keys and how long).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::distributed {

using Bytes = std::vector<uint8_t>;
using Millis = std::chrono::milliseconds;

inline constexpr Millis kDefaultStoreTimeout{300'000};  // torch's default: 5 minutes

class Store {
 public:
  explicit Store(Millis timeout = kDefaultStoreTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // The value of key, waiting up to the store's timeout for it to be set.
  virtual Bytes get(const std::string& key) = 0;
  // Adds `amount` to the integer stored at key (0 when absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  // Sets key to `desired` when its value is `expected` (or when absent and expected is empty);
  // returns the value now stored.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  // Whether every key is set, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key is set (timeout: the store's when not given).
  virtual void wait(const std::vector<std::string>& keys, Millis timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  Millis timeout() const { return timeout_; }
  void set_timeout(Millis t) { timeout_ = t; }

 protected:
  Millis timeout_;
};

// A store served over TCP by the master process (is_master: it runs the server in a thread of
// its own, on `port`, 0 choosing a free one: port() says which); every process, the master
// included, is a client. A client retries the connection until the timeout (the master may
// start later).
class TCPStore : public Store {
 public:
  TCPStore(const std::string& host, int port, bool is_master, Millis timeout = kDefaultStoreTimeout,
           int world_size = -1, bool wait_for_workers = true);
  ~TCPStore() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  class Server;
  class Client;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

// A store in a file every process can open (a shared file system, or one machine): each
// operation locks the file, reads the records appended so far, and appends its own.
class FileStore : public Store {
 public:
  FileStore(std::string path, int world_size = -1, Millis timeout = kDefaultStoreTimeout);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Another store's keys under "prefix/" (each process group rendezvous in its own namespace).
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string key_of(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> keys_of(const std::vector<std::string>& keys) const;
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace ember::distributed

// FileStore: records "key, value" (or a deletion) appended to one file under an exclusive flock;
// every operation replays the file to know the current keys. Jobs keep few keys (addresses,
// counters), so replaying costs little, and the file survives any process's crash.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "distributed/store_common.h"

namespace ember::distributed {
namespace {

using Map = std::map<std::string, std::string>;

// The file open and locked for one operation.
class LockedFile {
 public:
  explicit LockedFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw DistStoreError(detail::cat("FileStore: cannot open '", path, "': ", std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~LockedFile() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  Map read() {
    std::string all;
    char chunk[65536];
    ::lseek(fd_, 0, SEEK_SET);
    for (ssize_t n; (n = ::read(fd_, chunk, sizeof(chunk))) > 0;) all.append(chunk, size_t(n));
    Map m;
    size_t at = 0;
    auto field = [&](std::string& out) {
      if (all.size() < at + 8) return false;
      uint64_t len = 0;
      std::memcpy(&len, all.data() + at, 8);
      if (all.size() < at + 8 + len) return false;
      out.assign(all, at + 8, len);
      at += 8 + len;
      return true;
    };
    for (;;) {
      if (at >= all.size()) break;
      const char op = all[at++];
      std::string key, value;
      if (!field(key) || (op == 'S' && !field(value))) break;  // a torn last record: ignored
      if (op == 'S') m[key] = value;
      else m.erase(key);
    }
    return m;
  }
  void append_set(const std::string& key, const std::string& value) { append('S', key, &value); }
  void append_delete(const std::string& key) { append('D', key, nullptr); }

 private:
  void append(char op, const std::string& key, const std::string* value) {
    std::string rec(1, op);
    auto put = [&](const std::string& f) {
      const uint64_t len = f.size();
      rec.append(reinterpret_cast<const char*>(&len), 8);
      rec += f;
    };
    put(key);
    if (value) put(*value);
    ::lseek(fd_, 0, SEEK_END);
    size_t done = 0;
    while (done < rec.size()) {
      const ssize_t n = ::write(fd_, rec.data() + done, rec.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw DistStoreError(detail::cat("FileStore: cannot write '", path_, "': ", std::strerror(errno)));
      done += size_t(n);
    }
  }
  std::string path_;
  int fd_ = -1;
};

Bytes as_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

}  // namespace

FileStore::FileStore(std::string path, int /*world_size*/, Millis timeout) : Store(timeout), path_(std::move(path)) {
  LockedFile touch(path_);
}

void FileStore::set(const std::string& key, const Bytes& value) {
  LockedFile f(path_);
  f.append_set(key, std::string(value.begin(), value.end()));
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout_);
  LockedFile f(path_);
  const Map m = f.read();
  auto it = m.find(key);
  if (it == m.end()) throw DistStoreError(detail::cat("FileStore::get: key '", key, "' was deleted while being read"));
  return as_bytes(it->second);
}

int64_t FileStore::add(const std::string& key, int64_t amount) {
  LockedFile f(path_);
  const Map m = f.read();
  auto it = m.find(key);
  const int64_t now = (it == m.end() ? 0 : parse_int(it->second, key)) + amount;
  f.append_set(key, std::to_string(now));
  return now;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  LockedFile f(path_);
  const Map m = f.read();
  const std::string want(expected.begin(), expected.end()), put(desired.begin(), desired.end());
  auto it = m.find(key);
  if (it == m.end()) {
    if (!want.empty()) return expected;
    f.append_set(key, put);
    return desired;
  }
  if (it->second != want) return as_bytes(it->second);
  f.append_set(key, put);
  return desired;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  LockedFile f(path_);
  const Map m = f.read();
  for (const auto& k : keys)
    if (!m.count(k)) return false;
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) throw_wait_timeout("FileStore", keys, timeout);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool FileStore::delete_key(const std::string& key) {
  LockedFile f(path_);
  if (!f.read().count(key)) return false;
  f.append_delete(key);
  return true;
}

int64_t FileStore::num_keys() {
  LockedFile f(path_);
  return int64_t(f.read().size());
}

}  // namespace ember::distributed

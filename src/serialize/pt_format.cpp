// save / load in PyTorch's .pt format (zip of data.pkl + data/<key> storages + version), and
// atomic file writes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "ember/core/backend.h"
#include "ember/ops.h"
#include "ember/serialize/serialize.h"
#include "pickle.h"
#include "zip.h"

namespace ember {

namespace serialize::testing {
// Test hook: when >= 0, atomic_write_file fails after writing this many bytes of the temp file.
std::atomic<long long> fail_write_after_bytes{-1};
}  // namespace serialize::testing

using namespace serialize;

namespace {

std::string errno_msg() { return std::strerror(errno); }

struct StorageOut { std::string key; DType dtype; const Storage* storage; Tensor keep; };

std::string save_archive(const Value& obj) {
  std::vector<StorageOut> storages;
  std::map<const Storage*, size_t> by_ptr;
  // A device tensor is written from a host copy of its whole storage, made once per storage, so
  // views that share device memory still share one entry, as torch's.
  std::map<const Storage*, StoragePtr> host_copies;
  PersistFn persist = [&](const Tensor& t0) -> TensorRecord {
    EMBER_CHECK(t0.defined(), "save: undefined tensor");
    Tensor t = t0;
    if (!t.is_cpu()) {
      const StoragePtr& device_storage = t0.impl()->storage();
      StoragePtr& host = host_copies[device_storage.get()];
      if (!host) {
        host = std::make_shared<Storage>(device_storage->nbytes(), Device(DeviceType::CPU));
        copy_bytes(host->data(), host->device(), device_storage->data(), device_storage->device(),
                   device_storage->nbytes());
      }
      t = Tensor(std::make_shared<TensorImpl>(host, t0.dtype(), t0.sizes(), t0.strides(), t0.storage_offset()));
    }
    const Storage* s = t.impl()->storage().get();
    auto it = by_ptr.find(s);
    if (it != by_ptr.end() && storages[it->second].dtype != t.dtype()) {
      t = t.clone().contiguous();  // the same bytes viewed as another dtype: written separately
      s = t.impl()->storage().get();
      it = by_ptr.end();
    }
    size_t idx;
    if (it == by_ptr.end()) {
      idx = storages.size();
      storages.push_back({std::to_string(idx), t.dtype(), s, t});
      by_ptr[s] = idx;
    } else {
      idx = it->second;
    }
    int64_t numel = int64_t(s->nbytes()) / t.element_size();
    return TensorRecord{storages[idx].key, t.dtype(), numel, t.storage_offset(), t.sizes(), t.strides(),
                        t0.device().str()};
  };
  std::string pkl = pickle_dump(obj, persist);
  ZipWriter zw;
  const std::string root = "archive/";
  zw.add(root + "data.pkl", pkl);
  for (const auto& s : storages) {
    size_t n = s.storage->nbytes() / size_t(element_size(s.dtype)) * size_t(element_size(s.dtype));
    zw.add(root + "data/" + s.key, std::string_view(static_cast<const char*>(s.storage->data()), n));
  }
  zw.add(root + "version", "3\n");
  return zw.finish();
}

struct Mapping {
  void* p = nullptr;
  size_t n = 0;
  ~Mapping() { if (p) munmap(p, n); }
};

void release_mapping(void*, void* ctx) { delete static_cast<std::shared_ptr<Mapping>*>(ctx); }

// Where a storage saved at `location` ("cpu", "cuda:1") loads without a map_location: torch's
// checks and messages (serialization.py's _validate_device).
Device restore_location(const std::string& location) {
  if (location == "cpu") return Device(DeviceType::CPU);
  EMBER_CHECK(location.rfind("cuda", 0) == 0, "don't know how to restore data location of "
              "torch.storage.UntypedStorage (tagged with ", location, ")");
  Device d(location);
  EMBER_CHECK(has_device_backend(DeviceType::CUDA) && device_backend(DeviceType::CUDA).device_count() > 0,
              "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is False. If you "
              "are running on a CPU-only machine, please use ember.load with map_location=ember.device('cpu') to "
              "map your storages to the CPU.");
  int count = device_backend(DeviceType::CUDA).device_count();
  EMBER_CHECK(!d.has_index() || d.index < count, "Attempting to deserialize object on CUDA device ", d.index,
              " but ember.cuda.device_count() is ", count,
              ". Please use ember.load with map_location to map your storages to an existing device.");
  return d;
}

Device target_device(const LoadOptions& opts, const std::string& location) {
  if (opts.map_location) return *opts.map_location;
  for (const auto& [from, to] : opts.map_locations)
    if (from == location) return to;
  return opts.restore_locations ? restore_location(location) : Device(DeviceType::CPU);
}

// mapping: when set, storages view the mapped bytes (kept alive by the tensors) instead of copies.
Value load_archive(const char* data, size_t size, const LoadOptions& opts, std::shared_ptr<Mapping> mapping) {
  ZipReader zr(data, size, /*verify_crc=*/mapping == nullptr);
  const ZipEntry* pkl = nullptr;
  for (const auto& e : zr.entries()) {
    auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
      EMBER_CHECK(!pkl, "invalid checkpoint: more than one data.pkl");
      pkl = &e;
    }
  }
  EMBER_CHECK(pkl, "invalid checkpoint: no <archive>/data.pkl entry (not a zip-format torch.save file?)");
  std::string root = pkl->name.substr(0, pkl->name.size() - std::strlen("data.pkl"));
  // Newer torch writes <archive>/byteorder; storages are raw bytes, so only little-endian loads.
  if (const ZipEntry* bo = zr.find(root + "byteorder")) {
    EMBER_CHECK(zr.read(*bo) == "little", "load: checkpoint byteorder '", std::string(zr.read(*bo).substr(0, 16)),
                "' is not supported (only little-endian)");
  }
  StorageFn storage = [&](const std::string& key, DType dtype, int64_t numel, const std::string& location) -> Tensor {
    // map_location moves every storage (once, so views keep sharing); else each goes back where
    // it was saved from.
    const Device target = target_device(opts, location);
    const ZipEntry* e = zr.find(root + "data/" + key);
    EMBER_CHECK(e, "invalid checkpoint: storage '", key, "' has no entry ", root, "data/", key);
    int64_t nbytes;
    EMBER_CHECK(!__builtin_mul_overflow(numel, element_size(dtype), &nbytes) && uint64_t(nbytes) <= e->size,
                "invalid checkpoint: storage '", key, "' declares ", numel, " elements of ", dtype_name(dtype),
                " but its entry holds ", e->size, " bytes");
    StoragePtr st;
    const char* src = data + e->data_offset;
    if (mapping && nbytes > 0 && (reinterpret_cast<uintptr_t>(src) % size_t(element_size(dtype))) == 0) {
      st = std::make_shared<Storage>(const_cast<char*>(src), size_t(nbytes), Device(DeviceType::CPU),
                                     &release_mapping, new std::shared_ptr<Mapping>(mapping));
    } else {
      st = std::make_shared<Storage>(size_t(nbytes), Device(DeviceType::CPU));
      if (nbytes) std::memcpy(st->data(), src, size_t(nbytes));
    }
    Tensor flat(std::make_shared<TensorImpl>(st, dtype, Shape{numel}, Shape{1}, 0));
    return target.is_cpu() ? flat : flat.to(target);
  };
  return pickle_load(zr.read(*pkl), storage);
}

}  // namespace

std::string save_to_bytes(const Value& obj) { return save_archive(obj); }

Value load_from_bytes(const std::string& bytes, LoadOptions opts) {
  return load_archive(bytes.data(), bytes.size(), opts, nullptr);
}

void save(const Value& obj, const std::string& path) { atomic_write_file(path, save_archive(obj)); }

Value load(const std::string& path, LoadOptions opts) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, "load: cannot open '", path, "': ", errno_msg());
  struct FdGuard { int fd; ~FdGuard() { ::close(fd); } } guard{fd};
  struct stat st;
  EMBER_CHECK(::fstat(fd, &st) == 0, "load: cannot stat '", path, "': ", errno_msg());
  EMBER_CHECK(S_ISREG(st.st_mode), "load: '", path, "' is not a regular file");
  size_t size = size_t(st.st_size);
  if (opts.mmap && size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    EMBER_CHECK(p != MAP_FAILED, "load: cannot mmap '", path, "': ", errno_msg());
    auto m = std::make_shared<Mapping>();
    m->p = p;
    m->n = size;
    try {
      return load_archive(static_cast<const char*>(p), size, opts, m);
    } catch (const Error& e) {
      throw Error(detail::cat(e.what(), " (file '", path, "')"));
    }
  }
  std::string bytes(size, '\0');
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::read(fd, bytes.data() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    EMBER_CHECK(r > 0, "load: error reading '", path, "': ", r < 0 ? errno_msg() : "unexpected end of file");
    got += size_t(r);
  }
  try {
    return load_archive(bytes.data(), bytes.size(), opts, nullptr);
  } catch (const Error& e) {
    throw Error(detail::cat(e.what(), " (file '", path, "')"));
  }
}

void atomic_write_file(const std::string& path, const std::string& bytes) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  EMBER_CHECK(fd >= 0, "save: cannot create a temporary file next to '", path, "': ", errno_msg());
  std::string tmp(name.data());
  auto fail = [&](const std::string& what) {
    std::string msg = what;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(detail::cat("save: ", msg, " while writing '", path, "'"));
  };
  ::fchmod(fd, 0644);
  size_t done = 0;
  long long limit = serialize::testing::fail_write_after_bytes.load();
  while (done < bytes.size()) {
    size_t chunk = std::min<size_t>(bytes.size() - done, size_t(1) << 24);
    if (limit >= 0 && done + chunk > size_t(limit)) {
      if (done < size_t(limit)) { ssize_t r = ::write(fd, bytes.data() + done, size_t(limit) - done); (void)r; }
      fail("simulated write failure");
    }
    ssize_t r = ::write(fd, bytes.data() + done, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail(errno_msg());
    done += size_t(r);
  }
  if (::fsync(fd) != 0) fail(errno_msg());
  if (::close(fd) != 0) { ::unlink(tmp.c_str()); throw Error("save: close failed for '" + path + "': " + errno_msg()); }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string m = errno_msg();
    ::unlink(tmp.c_str());
    throw Error("save: cannot rename the temporary file onto '" + path + "': " + m);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { ::fsync(dfd); ::close(dfd); }
}

}  // namespace ember

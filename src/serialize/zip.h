#pragma once
// Minimal zip archive support for PyTorch's .pt files: stored (uncompressed) entries only,
// data 64-byte aligned on write (as torch does, by padding the local header's extra field).
// The reader checks every offset and size against the buffer and rejects overlapping entries.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::serialize {

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

class ZipWriter {
 public:
  void add(const std::string& name, std::string_view data);
  std::string finish();  // the archive bytes

 private:
  struct Entry { std::string name; uint32_t crc; uint64_t size; uint64_t offset; };
  std::string out_;
  std::vector<Entry> entries_;
};

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // into the archive buffer
  uint64_t size = 0;
  uint32_t crc = 0;
};

// Parses the central directory of `data[0, size)`; throws ember::Error on anything malformed.
class ZipReader {
 public:
  ZipReader(const char* data, size_t size, bool verify_crc = true);
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  std::string_view read(const ZipEntry& e) const { return {data_ + e.data_offset, size_t(e.size)}; }

 private:
  const char* data_;
  size_t size_;
  std::vector<ZipEntry> entries_;
};

}  // namespace ember::serialize

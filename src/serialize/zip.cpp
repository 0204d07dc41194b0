#include "zip.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "ember/core/errors.h"

namespace ember::serialize {

namespace {
std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
const std::array<uint32_t, 256> kCrcTable = make_crc_table();

void put16(std::string& s, uint16_t v) { s.push_back(char(v & 0xff)); s.push_back(char(v >> 8)); }
void put32(std::string& s, uint32_t v) { for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff)); }
uint16_t get16(const char* p) { return uint16_t(uint8_t(p[0]) | (uint8_t(p[1]) << 8)); }
uint32_t get32(const char* p) {
  return uint32_t(uint8_t(p[0])) | (uint32_t(uint8_t(p[1])) << 8) | (uint32_t(uint8_t(p[2])) << 16) |
         (uint32_t(uint8_t(p[3])) << 24);
}
[[noreturn]] void bad(const std::string& what) { throw Error("invalid checkpoint (zip): " + what); }
}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

void ZipWriter::add(const std::string& name, std::string_view data) {
  EMBER_CHECK(data.size() < 0xFFFFFFFFull && out_.size() < 0xFFFFFFFFull - data.size() - 4096,
              "save: checkpoints over 4 GiB (zip64) are not supported");
  EMBER_CHECK(name.size() < 0xFFFF, "save: zip entry name too long");
  Entry e{name, crc32(data.data(), data.size()), data.size(), out_.size()};
  // Pad the extra field so the data starts on a 64-byte boundary (torch does the same).
  size_t header = 30 + name.size();
  size_t pad = (64 - (out_.size() + header + 4) % 64) % 64;
  put32(out_, 0x04034b50);
  put16(out_, 20);  // version needed
  put16(out_, 0);   // flags
  put16(out_, 0);   // method: stored
  put16(out_, 0);   // time
  put16(out_, 0x21);  // date (1980-01-01)
  put32(out_, e.crc);
  put32(out_, uint32_t(e.size));
  put32(out_, uint32_t(e.size));
  put16(out_, uint16_t(name.size()));
  put16(out_, uint16_t(4 + pad));
  out_ += name;
  put16(out_, 0x4246);  // "FB"
  put16(out_, uint16_t(pad));
  out_.append(pad, 'Z');
  out_.append(data.data(), data.size());
  entries_.push_back(std::move(e));
}

std::string ZipWriter::finish() {
  uint64_t cd_start = out_.size();
  for (const auto& e : entries_) {
    put32(out_, 0x02014b50);
    put16(out_, 20);  // made by
    put16(out_, 20);  // needed
    put16(out_, 0);
    put16(out_, 0);
    put16(out_, 0);
    put16(out_, 0x21);
    put32(out_, e.crc);
    put32(out_, uint32_t(e.size));
    put32(out_, uint32_t(e.size));
    put16(out_, uint16_t(e.name.size()));
    put16(out_, 0);  // extra
    put16(out_, 0);  // comment
    put16(out_, 0);  // disk
    put16(out_, 0);  // internal attrs
    put32(out_, 0);  // external attrs
    put32(out_, uint32_t(e.offset));
    out_ += e.name;
  }
  uint64_t cd_size = out_.size() - cd_start;
  EMBER_CHECK(entries_.size() < 0xFFFF && out_.size() < 0xFFFFFFFFull, "save: archive too large for zip32");
  put32(out_, 0x06054b50);
  put16(out_, 0);
  put16(out_, 0);
  put16(out_, uint16_t(entries_.size()));
  put16(out_, uint16_t(entries_.size()));
  put32(out_, uint32_t(cd_size));
  put32(out_, uint32_t(cd_start));
  put16(out_, 0);
  return std::move(out_);
}

ZipReader::ZipReader(const char* data, size_t size, bool verify_crc) : data_(data), size_(size) {
  if (size < 22) bad("file too small to be a zip archive (" + std::to_string(size) + " bytes)");
  // End of central directory record: the last 22+comment bytes.
  size_t eocd = size_t(-1);
  size_t lowest = size > 22 + 0xFFFF ? size - 22 - 0xFFFF : 0;
  for (size_t p = size - 22 + 1; p-- > lowest;) {
    if (get32(data + p) == 0x06054b50 && p + 22 + get16(data + p + 20) == size) { eocd = p; break; }
  }
  if (eocd == size_t(-1)) bad("end of central directory record not found");
  const char* e = data + eocd;
  uint16_t disk = get16(e + 4), cd_disk = get16(e + 6);
  uint16_t n_here = get16(e + 8), n_total = get16(e + 10);
  uint32_t cd_size = get32(e + 12), cd_off = get32(e + 16);
  if (disk != 0 || cd_disk != 0 || n_here != n_total) bad("multi-disk archives are not supported");
  if (n_total == 0xFFFF || cd_off == 0xFFFFFFFFu || cd_size == 0xFFFFFFFFu) bad("zip64 archives are not supported");
  if (uint64_t(cd_off) + cd_size > eocd) bad("central directory out of bounds");
  struct Range { uint64_t begin, end; const std::string* name; };
  std::vector<Range> ranges;
  size_t p = cd_off, cd_end = size_t(cd_off) + cd_size;
  for (uint32_t i = 0; i < n_total; ++i) {
    if (p + 46 > cd_end) bad("central directory truncated");
    const char* c = data + p;
    if (get32(c) != 0x02014b50) bad("bad central directory signature");
    uint16_t flags = get16(c + 8), method = get16(c + 10);
    uint32_t crc = get32(c + 16), csize = get32(c + 20), usize = get32(c + 24);
    uint16_t nlen = get16(c + 28), xlen = get16(c + 30), clen = get16(c + 32);
    uint32_t loff = get32(c + 42);
    if (p + 46 + uint64_t(nlen) + xlen + clen > cd_end) bad("central directory entry out of bounds");
    std::string name(c + 46, nlen);
    p += 46 + size_t(nlen) + xlen + clen;
    if (method != 0) bad("entry '" + name + "' is compressed (method " + std::to_string(method) + "); only stored entries are supported");
    if (flags & 1) bad("entry '" + name + "' is encrypted");
    if (csize == 0xFFFFFFFFu || usize == 0xFFFFFFFFu || loff == 0xFFFFFFFFu) bad("zip64 entries are not supported");
    if (csize != usize) bad("entry '" + name + "': stored sizes disagree");
    if (uint64_t(loff) + 30 > cd_off) bad("entry '" + name + "': local header out of bounds");
    const char* l = data + loff;
    if (get32(l) != 0x04034b50) bad("entry '" + name + "': bad local header signature");
    uint16_t lmethod = get16(l + 8), lnlen = get16(l + 26), lxlen = get16(l + 28);
    uint16_t lflags = get16(l + 6);
    if (lmethod != method) bad("entry '" + name + "': local header and central directory disagree on method");
    uint64_t doff = uint64_t(loff) + 30 + lnlen + lxlen;
    if (doff > cd_off || usize > cd_off - doff) bad("entry '" + name + "': data out of bounds");
    if (lnlen != nlen || std::memcmp(l + 30, name.data(), nlen) != 0)
      bad("entry '" + name + "': local header and central directory disagree on the name");
    if (!(lflags & 8) && (get32(l + 18) != csize || get32(l + 22) != usize))
      bad("entry '" + name + "': local header and central directory disagree on the size");
    for (const auto& en : entries_)
      if (en.name == name) bad("duplicate entry '" + name + "'");
    entries_.push_back(ZipEntry{name, doff, usize, crc});
    ranges.push_back(Range{loff, doff + usize, nullptr});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end) bad("overlapping entries");
  if (verify_crc)
    for (const auto& en : entries_)
      if (crc32(data_ + en.data_offset, size_t(en.size)) != en.crc) bad("CRC mismatch in entry '" + en.name + "'");
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace ember::serialize

// Whole-file reads for the dataset loaders, gunzipping transparently (the MNIST files are
// distributed as .gz, and Debian installs them that way).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "ember/core/errors.h"
#include "ember/data/datasets.h"

namespace ember::datasets {

namespace {

std::string read_raw(const std::filesystem::path& file) {
  const std::string path = file.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  struct FdGuard { int fd; ~FdGuard() { ::close(fd); } } guard{fd};
  struct stat st;
  EMBER_CHECK(::fstat(fd, &st) == 0, "cannot stat ", path, ": ", std::strerror(errno));
  EMBER_CHECK(S_ISREG(st.st_mode), "cannot read ", path, ": not a regular file");
  std::string bytes(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    EMBER_CHECK(r >= 0, "error reading ", path, ": ", std::strerror(errno));
    EMBER_CHECK(r > 0, "error reading ", path, ": the file shrank while it was read");
    got += size_t(r);
  }
  return bytes;
}

bool has_gzip_magic(const std::string& bytes) {
  return bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b;
}

// The gzip trailer ends with the uncompressed size mod 2^32: a good first guess for the buffer.
// A truncated or hostile file has garbage there, so never believe more than deflate's best ratio
// (1032:1) allows.
size_t size_hint(const std::string& gz) {
  size_t n = gz.size();
  if (n < 18) return 4096;  // shorter than a gzip header and trailer
  uint32_t isize = 0;
  for (int i = 0; i < 4; ++i) isize |= uint32_t(uint8_t(gz[n - 4 + i])) << (8 * i);
  return std::clamp<size_t>(isize, 4096, std::max<size_t>(4096, n * 1032));
}

std::string gunzip(const std::string& gz, const std::string& path) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (and check the CRC), not a zlib one.
  EMBER_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, path, ": cannot initialise zlib");
  struct ZGuard { z_stream* zs; ~ZGuard() { inflateEnd(zs); } } guard{&zs};

  std::string out(size_hint(gz), '\0');
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
    // avail_in/avail_out are 32-bit: feed files over 4 GiB in pieces.
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + in_pos));
    zs.avail_in = uInt(std::min<size_t>(gz.size() - in_pos, UINT_MAX));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    zs.avail_out = uInt(std::min<size_t>(out.size() - out_pos, UINT_MAX));
    const uInt in_before = zs.avail_in, out_before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_before - zs.avail_in;
    out_pos += out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (in_pos == gz.size()) break;
      // gzip allows several members one after another (`cat a.gz b.gz`); anything else is junk.
      EMBER_CHECK(in_pos + 2 <= gz.size() && uint8_t(gz[in_pos]) == 0x1f && uint8_t(gz[in_pos + 1]) == 0x8b,
                  path, ": corrupt gzip data (", gz.size() - in_pos, " bytes of trailing garbage)");
      EMBER_CHECK(inflateReset(&zs) == Z_OK, path, ": corrupt gzip data (cannot reset the stream)");
      continue;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      throw Error(detail::cat(path, ": corrupt gzip data (", zs.msg ? zs.msg : "invalid data", ")"));
    if (rc == Z_MEM_ERROR) throw Error(detail::cat(path, ": out of memory while decompressing"));
    // Z_BUF_ERROR (or Z_OK) with all input consumed and output room left: the stream just stops.
    if (in_pos == gz.size() && out_pos < out.size())
      throw Error(detail::cat(path, ": truncated gzip data (the file ends before the end of the compressed stream, after ",
                              gz.size(), " bytes)"));
  }
  out.resize(out_pos);
  return out;
}

}  // namespace

std::string read_file_maybe_gzip(const std::filesystem::path& file) {
  std::string bytes = read_raw(file);
  if (!has_gzip_magic(bytes)) return bytes;
  return gunzip(bytes, file.string());
}

}  // namespace ember::datasets

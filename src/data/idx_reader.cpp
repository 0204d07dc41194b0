// IDX files (LeCun's MNIST format). The header is trusted for nothing: every size is checked
// against the bytes actually there before anything is allocated from it.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ember/core/errors.h"
#include "ember/data/datasets.h"
#include "ember/ops.h"

namespace ember::datasets {

namespace {

struct IdxType { uint8_t code; DType dtype; const char* name; };
constexpr IdxType kIdxTypes[] = {
    {0x08, kUInt8, "uint8"},   {0x09, kInt8, "int8"},       {0x0B, kInt16, "int16"},
    {0x0C, kInt32, "int32"},   {0x0D, kFloat32, "float32"}, {0x0E, kFloat64, "float64"},
};

const IdxType* find_type(uint8_t code) {
  for (const auto& t : kIdxTypes)
    if (t.code == code) return &t;
  return nullptr;
}

uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | uint32_t(u[3]);
}

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// IDX stores multi-byte values big-endian; reverse each element in place.
void swap_elements(char* p, int64_t n, int64_t width) {
  if (width == 1) return;
  for (int64_t i = 0; i < n; ++i, p += width)
    for (int64_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

}  // namespace

Tensor read_idx(const std::filesystem::path& file) {
  const std::string path = file.string();
  const std::string bytes = read_file_maybe_gzip(file);
  EMBER_CHECK(bytes.size() >= 4, path, ": not an IDX file (", bytes.size(),
              " bytes, shorter than the 4-byte magic number)");
  EMBER_CHECK(bytes[0] == 0 && bytes[1] == 0, path, ": not an IDX file (bad magic: first bytes ",
              hex_byte(uint8_t(bytes[0])), " ", hex_byte(uint8_t(bytes[1])), ", expected 0x00 0x00)");
  const IdxType* type = find_type(uint8_t(bytes[2]));
  EMBER_CHECK(type, path, ": unknown IDX type code ", hex_byte(uint8_t(bytes[2])),
              " (known: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)");
  const int ndim = uint8_t(bytes[3]);
  EMBER_CHECK(ndim >= 1, path, ": IDX header has 0 dimensions");
  const size_t header = 4 + 4 * size_t(ndim);
  EMBER_CHECK(bytes.size() >= header, path, ": truncated IDX header (", ndim, " dimensions need ", header,
              " header bytes, the file has ", bytes.size(), ")");

  std::vector<int64_t> dims(ndim);
  for (int d = 0; d < ndim; ++d) {
    const int32_t dim = int32_t(be32(bytes.data() + 4 + 4 * d));
    EMBER_CHECK(dim >= 0, path, ": IDX dimension ", d, " is negative (", dim, ")");
    dims[d] = dim;
  }

  const int64_t width = element_size(type->dtype);
  const uint64_t have = bytes.size() - header;
  // Hostile dims (0x7fffffff^3) overflow 64 bits: refuse them rather than wrap around. A zero dim
  // does not excuse the others: the strides of the empty tensor are computed from them too.
  uint64_t need = uint64_t(width);
  bool overflow = false, has_zero = false;
  for (int64_t d : dims) {
    has_zero = has_zero || d == 0;
    overflow = overflow || __builtin_mul_overflow(need, uint64_t(d == 0 ? 1 : d), &need);
  }
  overflow = overflow || need > uint64_t(INT64_MAX);
  if (has_zero && !overflow) need = 0;
  EMBER_CHECK(!overflow && need == have, path, ": IDX data size mismatch: dims ", dims, " of ", type->name,
              " need ", overflow ? std::string("more than 2^63") : std::to_string(need),
              " bytes, but the file has ", have, " bytes after the ", header, "-byte header");

  Tensor t = empty(dims, {.dtype = type->dtype});
  char* dst = static_cast<char*>(t.data_ptr());
  if (have) std::memcpy(dst, bytes.data() + header, have);
  swap_elements(dst, t.numel(), width);
  return t;
}

}  // namespace ember::datasets

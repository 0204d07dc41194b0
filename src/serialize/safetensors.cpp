// safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header length
// N, N bytes of JSON header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {str: str}}, then the data buffer. The reader validates like the reference
// implementation: every size and offset is checked, tensors must tile the buffer exactly, and any
// violation is an ember::Error. The JSON reader below is small and strict (RFC 8259, UTF-8).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <fcntl.h>
#include <unistd.h>

#include "core/json_string.h"
#include "core/utf8.h"
#include "ember/core/errors.h"
#include "ember/ops.h"
#include "ember/serialize/serialize.h"

namespace ember::safetensors {

namespace {

constexpr uint64_t kMaxHeaderSize = 100'000'000;  // as the reference implementation
constexpr int kMaxDepth = 64;

#define ST_CHECK(cond, ...) EMBER_CHECK(cond, "safetensors: ", __VA_ARGS__)

// ------------------------------------------------------------------ JSON

struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  std::string text;  // number literal, or string value
  std::vector<Json> arr;
  // Object members as parallel vectors: a vector of pair<string, Json> would need Json complete.
  std::vector<std::string> keys;
  std::vector<Json> values;
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    ST_CHECK(i_ == s_.size(), "invalid JSON header: trailing characters at offset ", i_);
    return v;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;

  [[noreturn]] void fail(const char* what) const {
    throw Error(detail::cat("safetensors: invalid JSON header: ", what, " at offset ", i_));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool at_end() const { return i_ >= s_.size(); }
  void skip_ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (at_end() || s_[i_] != c) fail("unexpected character");
    ++i_;
  }
  Json parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    if (at_end()) fail("unexpected end");
    char c = s_[i_];
    Json v;
    if (c == '{') {
      v.kind = Json::Object;
      ++i_;
      skip_ws();
      if (peek() == '}') { ++i_; return v; }
      std::set<std::string> seen;
      for (;;) {
        skip_ws();
        if (peek() != '"') fail("expected a string key");
        std::string key = parse_string();
        if (!seen.insert(key).second)
          throw Error(detail::cat("safetensors: invalid JSON header: duplicate key \"", key, "\""));
        skip_ws();
        expect(':');
        skip_ws();
        Json child = parse_value(depth + 1);
        v.keys.push_back(std::move(key));
        v.values.push_back(std::move(child));
        skip_ws();
        if (peek() == ',') { ++i_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++i_;
      skip_ws();
      if (peek() == ']') { ++i_; return v; }
      for (;;) {
        skip_ws();
        v.arr.push_back(parse_value(depth + 1));
        skip_ws();
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::String;
      v.text = parse_string();
      return v;
    }
    if (s_.compare(i_, 4, "true") == 0) { i_ += 4; v.kind = Json::Bool; v.b = true; return v; }
    if (s_.compare(i_, 5, "false") == 0) { i_ += 5; v.kind = Json::Bool; return v; }
    if (s_.compare(i_, 4, "null") == 0) { i_ += 4; return v; }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::Number;
      v.text = parse_number();
      return v;
    }
    fail("unexpected character");
  }
  std::string parse_number() {
    size_t start = i_;
    auto digits = [&] {
      size_t d = i_;
      while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("malformed number");
    };
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else {
      digits();
    }
    if (peek() == '.') { ++i_; digits(); }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      digits();
    }
    return s_.substr(start, i_ - start);
  }
  uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') v |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= uint32_t(h - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') { ++i_; return out; }
      if (c < 0x20) fail("control character in string");
      if (c == '\\') {
        ++i_;
        if (at_end()) fail("unterminated escape");
        char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (s_.compare(i_, 2, "\\u") != 0) fail("lone surrogate");
              i_ += 2;
              uint32_t lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail("bad surrogate pair");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail("lone surrogate");
            }
            append_utf8(out, char32_t(cp));
            break;
          }
          default: fail("bad escape");
        }
        continue;
      }
      // Raw UTF-8 sequence: validate strictly (no overlongs, surrogates or > U+10FFFF).
      size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      if (len == 0 || i_ + len > s_.size()) fail("invalid UTF-8");
      uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) {
        unsigned char cc = static_cast<unsigned char>(s_[i_ + k]);
        if ((cc >> 6) != 0x2) fail("invalid UTF-8");
        cp = (cp << 6) | (cc & 0x3F);
      }
      static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8");
      out.append(s_, i_, len);
      i_ += len;
    }
  }
};


// ------------------------------------------------------------------ dtypes

const char* dtype_code(DType t) {
  switch (t) {
    case DType::Bool: return "BOOL";
    case DType::UInt8: return "U8";
    case DType::Int8: return "I8";
    case DType::Int16: return "I16";
    case DType::Int32: return "I32";
    case DType::Int64: return "I64";
    case DType::Float16: return "F16";
    case DType::BFloat16: return "BF16";
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Complex64: case DType::Complex128: break;  // not in the format's dtype list
  }
  throw Error(detail::cat("safetensors: tensors of dtype ", dtype_name(t), " are not supported"));
}

DType dtype_from_code(const std::string& s) {
  static const std::map<std::string, DType> kCodes = {
      {"BOOL", DType::Bool}, {"U8", DType::UInt8},    {"I8", DType::Int8},       {"I16", DType::Int16},
      {"I32", DType::Int32}, {"I64", DType::Int64},   {"F16", DType::Float16},   {"BF16", DType::BFloat16},
      {"F32", DType::Float32}, {"F64", DType::Float64}};
  auto it = kCodes.find(s);
  ST_CHECK(it != kCodes.end(), "unknown or unsupported dtype \"", s, "\"");
  return it->second;
}

uint64_t json_uint(const Json& j, const char* what, const std::string& name) {
  ST_CHECK(j.kind == Json::Number, "tensor \"", name, "\": ", what, " must be a non-negative integer");
  const std::string& t = j.text;
  ST_CHECK(!t.empty() && t.find_first_not_of("0123456789") == std::string::npos, "tensor \"", name, "\": ", what,
           " must be a non-negative integer, got ", t);
  ST_CHECK(t.size() <= 20, "tensor \"", name, "\": ", what, " is too large: ", t);
  uint64_t v = 0;
  for (char c : t) {
    uint64_t d = uint64_t(c - '0');
    ST_CHECK(v <= (UINT64_MAX - d) / 10, "tensor \"", name, "\": ", what, " is too large: ", t);
    v = v * 10 + d;
  }
  return v;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct Parsed {
  std::vector<Entry> entries;  // header order
  Metadata metadata;
  uint64_t data_start = 0;  // 8 + N
};

uint64_t read_u64le(const unsigned char* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// Validates the header of a file of `file_size` bytes whose header bytes are `header`.
Parsed parse_header(const std::string& header, uint64_t n, uint64_t file_size) {
  Parsed out;
  out.data_start = 8 + n;
  ST_CHECK(!header.empty() && header[0] == '{', "invalid header: it must start with '{'");
  Json root = JsonParser(header).parse_document();
  ST_CHECK(root.kind == Json::Object, "invalid header: expected a JSON object");
  const uint64_t buffer_len = file_size - out.data_start;
  for (size_t member = 0; member < root.keys.size(); ++member) {
    const std::string& key = root.keys[member];
    const Json& val = root.values[member];
    if (key == "__metadata__") {
      ST_CHECK(val.kind == Json::Object, "__metadata__ must be an object of strings");
      for (size_t j = 0; j < val.keys.size(); ++j) {
        const std::string& mk = val.keys[j];
        const Json& mv = val.values[j];
        ST_CHECK(mv.kind == Json::String, "__metadata__ value for \"", mk, "\" must be a string");
        out.metadata.emplace_back(mk, mv.text);
      }
      continue;
    }
    ST_CHECK(val.kind == Json::Object, "tensor \"", key, "\": expected an object");
    const Json *dt = nullptr, *shape = nullptr, *offs = nullptr;
    for (size_t j = 0; j < val.keys.size(); ++j) {
      const std::string& fk = val.keys[j];
      const Json& fv = val.values[j];
      if (fk == "dtype") dt = &fv;
      else if (fk == "shape") shape = &fv;
      else if (fk == "data_offsets") offs = &fv;
      else throw Error(detail::cat("safetensors: tensor \"", key, "\": unknown field \"", fk, "\""));
    }
    ST_CHECK(dt && shape && offs, "tensor \"", key, "\": missing dtype, shape or data_offsets");
    ST_CHECK(dt->kind == Json::String, "tensor \"", key, "\": dtype must be a string");
    Entry e;
    e.name = key;
    e.dtype = dtype_from_code(dt->text);
    ST_CHECK(shape->kind == Json::Array, "tensor \"", key, "\": shape must be an array");
    uint64_t numel = 1;
    for (const Json& d : shape->arr) {
      uint64_t v = json_uint(d, "shape", key);
      ST_CHECK(v <= uint64_t(INT64_MAX), "tensor \"", key, "\": dimension too large");
      if (v != 0 && numel > uint64_t(INT64_MAX) / v)
        throw Error(detail::cat("safetensors: tensor \"", key, "\": shape overflows"));
      numel *= v;
      e.shape.push_back(int64_t(v));
    }
    const uint64_t esize = uint64_t(element_size(e.dtype));
    ST_CHECK(numel <= uint64_t(INT64_MAX) / esize, "tensor \"", key, "\": byte size overflows");
    ST_CHECK(offs->kind == Json::Array && offs->arr.size() == 2, "tensor \"", key,
             "\": data_offsets must be [begin, end]");
    e.begin = json_uint(offs->arr[0], "data_offsets", key);
    e.end = json_uint(offs->arr[1], "data_offsets", key);
    ST_CHECK(e.begin <= e.end, "tensor \"", key, "\": data_offsets begin ", e.begin, " > end ", e.end);
    ST_CHECK(e.end <= buffer_len, "tensor \"", key, "\": data_offsets end ", e.end, " is past the data buffer (",
             buffer_len, " bytes)");
    ST_CHECK(e.end - e.begin == numel * esize, "tensor \"", key, "\": data_offsets span ", e.end - e.begin,
             " bytes but dtype ", dt->text, " and shape need ", numel * esize);
    out.entries.push_back(std::move(e));
  }
  // Offsets must tile the buffer: sorted by offsets, each begins where the previous ended.
  std::vector<const Entry*> sorted;
  for (auto& e : out.entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry* a, const Entry* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  uint64_t pos = 0;
  for (const Entry* e : sorted) {
    ST_CHECK(e->begin == pos, "tensor \"", e->name, "\": invalid data_offsets [", e->begin, ", ", e->end,
             "]: expected it to begin at ", pos, " (overlapping or leaving a gap)");
    pos = e->end;
  }
  ST_CHECK(pos == buffer_len, "the tensors cover ", pos, " bytes but the data buffer has ", buffer_len);
  return out;
}

Parsed parse_file(const std::string& bytes) {
  ST_CHECK(bytes.size() >= 8, "file too small (", bytes.size(), " bytes): no header length");
  const uint64_t n = read_u64le(reinterpret_cast<const unsigned char*>(bytes.data()));
  ST_CHECK(n <= kMaxHeaderSize, "header too large (", n, " bytes; the limit is ", kMaxHeaderSize, ")");
  ST_CHECK(n <= bytes.size() - 8, "invalid header length ", n, ": the file has only ", bytes.size(), " bytes");
  return parse_header(bytes.substr(8, n), n, bytes.size());
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f, "safetensors: cannot open ", path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!f.bad(), "safetensors: error reading ", path);
  return s;
}

// Temp file in the same directory + fsync + rename. ember::atomic_write_file (pt_format.cpp) had
// not landed when this was written; switch to it once it has.
void write_atomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EMBER_CHECK(fd >= 0, "safetensors: cannot open ", tmp, " for writing");
  size_t done = 0;
  bool ok = true;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0) { ok = false; break; }
    done += size_t(w);
  }
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(detail::cat("safetensors: failed to write ", path));
  }
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { ::fsync(dfd); ::close(dfd); }
}

}  // namespace

std::string save_to_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors, const Metadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> sorted = tensors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    ST_CHECK(sorted[i].first != "__metadata__", "\"__metadata__\" cannot be a tensor name");
    ST_CHECK(i == 0 || sorted[i].first != sorted[i - 1].first, "duplicate tensor name \"", sorted[i].first, "\"");
    ST_CHECK(sorted[i].second.defined(), "tensor \"", sorted[i].first, "\" is undefined");
  }
  std::string header = "{";
  if (!metadata.empty()) {
    std::set<std::string> seen;
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      ST_CHECK(seen.insert(metadata[i].first).second, "duplicate metadata key \"", metadata[i].first, "\"");
      if (i) header += ',';
      append_json_string(header, metadata[i].first);
      header += ':';
      append_json_string(header, metadata[i].second);
    }
    header += '}';
  }
  std::vector<Tensor> data;
  uint64_t offset = 0;
  bool first = metadata.empty();
  for (auto& [name, t0] : sorted) {
    Tensor t = t0.detach();
    if (t.device().type != DeviceType::CPU) t = t.to(Device(DeviceType::CPU));
    t = t.contiguous();
    if (!first) header += ',';
    first = false;
    append_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += dtype_code(t.dtype());
    header += "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.sizes()[d]);
    }
    const uint64_t nbytes = uint64_t(t.nbytes());
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
    data.push_back(std::move(t));
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + header.size() + offset);
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out += char((n >> (8 * k)) & 0xFF);
  out += header;
  for (const Tensor& t : data)
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.data_ptr()), size_t(t.nbytes()));
  return out;
}

std::vector<std::pair<std::string, Tensor>> load_from_bytes(const std::string& bytes, LoadOptions opts) {
  Parsed p = parse_file(bytes);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const Entry& e : p.entries) {
    Tensor t = empty(e.shape, {.dtype = e.dtype});
    const size_t nbytes = size_t(e.end - e.begin);
    if (nbytes > 0) {
      std::memcpy(t.data_ptr(), bytes.data() + p.data_start + e.begin, nbytes);
      if (e.dtype == DType::Bool) {  // any nonzero byte is true; never leave a bool outside {0, 1}
        auto* b = static_cast<unsigned char*>(t.data_ptr());
        for (size_t k = 0; k < nbytes; ++k) b[k] = b[k] != 0;
      }
    }
    if (opts.map_location) t = t.to(*opts.map_location);
    out.emplace_back(e.name, std::move(t));
  }
  // Name-sorted, as the reference loader returns them.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
          const Metadata& metadata) {
  write_atomically(path, safetensors::save_to_bytes(tensors, metadata));
}

std::vector<std::pair<std::string, Tensor>> load(const std::string& path, LoadOptions opts) {
  return safetensors::load_from_bytes(read_file(path), opts);
}

Metadata load_metadata(const std::string& path) { return parse_file(read_file(path)).metadata; }

}  // namespace ember::safetensors

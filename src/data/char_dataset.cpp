// Character-level language modelling (minGPT's CharDataset): characters are Unicode code points,
// so the text is decoded from UTF-8 strictly, with the byte offset of any malformed sequence.
#include <algorithm>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "ember/core/errors.h"
#include "ember/data/datasets.h"
#include "ember/ops.h"

namespace ember::datasets {

namespace {

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

std::string code_point_name(char32_t c) {
  const char* digits = "0123456789ABCDEF";
  std::string hex;
  for (uint32_t v = uint32_t(c); v || hex.size() < 4; v >>= 4) hex.insert(hex.begin(), digits[v & 15]);
  return "U+" + hex;
}

[[noreturn]] void utf8_error(const std::string& source, size_t offset, const std::string& why) {
  throw ValueError(detail::cat(source, ": invalid UTF-8 at byte offset ", offset, " (", why, ")"));
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
std::vector<char32_t> decode_utf8(const std::string& text, const std::string& source) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  auto fail = [&source](size_t offset, const std::string& why) { utf8_error(source, offset, why); };
  for (size_t i = 0; i < n;) {
    const uint8_t lead = s[i];
    int len = 0;
    char32_t c = 0, min = 0;
    if (lead < 0x80) { out.push_back(lead); ++i; continue; }
    if (lead >= 0xC2 && lead <= 0xDF) { len = 2; c = lead & 0x1F; min = 0x80; }
    else if (lead >= 0xE0 && lead <= 0xEF) { len = 3; c = lead & 0x0F; min = 0x800; }
    else if (lead >= 0xF0 && lead <= 0xF4) { len = 4; c = lead & 0x07; min = 0x10000; }
    else if (lead >= 0x80 && lead <= 0xBF) fail(i, "unexpected continuation byte " + hex_byte(lead));
    else fail(i, "invalid byte " + hex_byte(lead));
    if (i + len > n) fail(i, "truncated " + std::to_string(len) + "-byte sequence at the end of the text");
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        fail(i, "truncated " + std::to_string(len) + "-byte sequence: byte " + hex_byte(s[i + k]) +
                    " is not a continuation byte");
      c = (c << 6) | (s[i + k] & 0x3F);
    }
    if (c < min) fail(i, "overlong encoding of " + code_point_name(c));
    if (c >= 0xD800 && c <= 0xDFFF) fail(i, "encoded surrogate " + code_point_name(c));
    if (c > 0x10FFFF) fail(i, "code point " + code_point_name(c) + " is above U+10FFFF");
    out.push_back(c);
    i += len;
  }
  return out;
}

}  // namespace

CharDataset::CharDataset(const std::filesystem::path& file, int64_t block_size) {
  build(read_file_maybe_gzip(file), block_size, file.string());
}

CharDataset CharDataset::from_text(const std::string& utf8_text, int64_t block_size) {
  CharDataset ds;
  ds.build(utf8_text, block_size, "<text>");
  return ds;
}

void CharDataset::build(const std::string& utf8_text, int64_t block_size, const std::string& source) {
  EMBER_CHECK_VALUE(block_size >= 1, "CharDataset: block_size must be at least 1, got ", block_size);
  const std::vector<char32_t> chars = decode_utf8(utf8_text, "CharDataset: " + source);
  EMBER_CHECK_VALUE(int64_t(chars.size()) >= block_size + 1, "CharDataset: ", source, " has ", chars.size(),
                    " characters, but block_size ", block_size, " needs at least ", block_size + 1);
  itos_ = chars;
  std::sort(itos_.begin(), itos_.end());
  itos_.erase(std::unique(itos_.begin(), itos_.end()), itos_.end());
  std::vector<int64_t> ids(chars.size());
  for (size_t i = 0; i < chars.size(); ++i)
    ids[i] = std::lower_bound(itos_.begin(), itos_.end(), chars[i]) - itos_.begin();
  block_size_ = block_size;
  ids_ = tensor(ids, {.dtype = kInt64});
}

int64_t CharDataset::size() const { return ids_.size(0) - block_size_; }

Value CharDataset::get(int64_t index) const {
  const int64_t n = size();
  const int64_t i = index < 0 ? index + n : index;
  EMBER_CHECK_INDEX(i >= 0 && i < n, "index ", index, " is out of range for CharDataset of size ", n);
  // Copies, so a caller writing to a sample cannot change the text.
  return Value::tuple({ids_.narrow(0, i, block_size_).clone(), ids_.narrow(0, i + 1, block_size_).clone()});
}

Tensor CharDataset::encode(const std::string& utf8_text) const {
  const std::vector<char32_t> chars = decode_utf8(utf8_text, "CharDataset.encode");
  std::vector<int64_t> ids(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) {
    auto it = std::lower_bound(itos_.begin(), itos_.end(), chars[i]);
    if (it == itos_.end() || *it != chars[i]) {
      std::string ch;
      append_utf8(ch, chars[i]);
      throw ValueError(detail::cat("CharDataset.encode: character '", ch, "' (", code_point_name(chars[i]),
                                   ") at position ", i, " is not in the vocabulary"));
    }
    ids[i] = it - itos_.begin();
  }
  return tensor(ids, {.dtype = kInt64});
}

std::string CharDataset::decode(const Tensor& ids) const {
  EMBER_CHECK_TYPE(is_integral(ids.dtype(), /*include_bool=*/false), "CharDataset.decode: expected an integer tensor of ids, got ",
                   dtype_name(ids.dtype()));
  EMBER_CHECK_VALUE(ids.dim() <= 1, "CharDataset.decode: expected a 1-D tensor of ids, got shape ", ids.sizes());
  const Tensor flat = ids.to(Device(DeviceType::CPU), kInt64).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  std::string out;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    EMBER_CHECK_VALUE(p[i] >= 0 && p[i] < vocab_size(), "CharDataset.decode: id ", p[i], " at position ", i,
                      " is out of range for a vocabulary of ", vocab_size());
    append_utf8(out, itos_[size_t(p[i])]);
  }
  return out;
}

}  // namespace ember::datasets

#pragma once
// A small strict JSON reader (RFC 8259, UTF-8 validated, nesting bounded): the safetensors header
// and model config files (config.json) go through it.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/utf8.h"
#include "ember/core/errors.h"

namespace ember::json {


struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  std::string text;  // number literal, or string value
  std::vector<Json> arr;
  // Object members as parallel vectors: a vector of pair<string, Json> would need Json complete.
  std::vector<std::string> keys;
  std::vector<Json> values;
};

// Errors read "<context>: <what> at offset N" (context: "safetensors: invalid JSON header", or
// "config.json: invalid JSON").
class JsonParser {
 public:
  JsonParser(const std::string& s, std::string context) : s_(s), context_(std::move(context)) {}
  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;
  const std::string& s_;
  std::string context_;
  size_t i_ = 0;

  [[noreturn]] void fail(const char* what) const { throw Error(detail::cat(context_, ": ", what, " at offset ", i_)); }
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
          throw Error(detail::cat(context_, ": duplicate key \"", key, "\""));
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

// The member `key` of an object, or null.
inline const Json* member(const Json& object, const std::string& key) {
  for (size_t k = 0; k < object.keys.size(); ++k)
    if (object.keys[k] == key) return &object.values[k];
  return nullptr;
}

}  // namespace ember::json

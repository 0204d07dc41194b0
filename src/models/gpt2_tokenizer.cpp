#include "ember/models/gpt2_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/read_file.h"
#include "core/utf8.h"
#include "ember/core/errors.h"
#include "serialize/json.h"

namespace ember::models {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};
#include "models/unicode_categories.inc"

template <size_t N> bool in(const CodeRange (&table)[N], uint32_t cp) {
  auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                             [](uint32_t v, const CodeRange& r) { return v < r.lo; });
  return it != std::begin(table) && cp <= (it - 1)->hi;
}

enum Kind { kSpace, kLetter, kNumber, kOther };
Kind kind_of(uint32_t cp) {
  if (in(kSpaceRanges, cp)) return kSpace;
  if (in(kLetterRanges, cp)) return kLetter;
  if (in(kNumberRanges, cp)) return kNumber;
  return kOther;
}

// UTF-8 -> code points, with each one's byte offset (invalid bytes count as U+FFFD, one byte).
void decode_utf8(const std::string& s, std::vector<uint32_t>& cps, std::vector<size_t>& at) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    uint32_t cp = 0xFFFD;
    if (len && i + len <= s.size()) {
      cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    } else {
      len = 1;
    }
    cps.push_back(cp);
    at.push_back(i);
    i += len;
  }
  at.push_back(s.size());
}


}  // namespace

// GPT-2's byte -> printable character table, as UTF-8 strings.
const std::vector<std::string>& GPT2Tokenizer::byte_chars() {
  static const std::vector<std::string> table = [] {
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<std::string> out(256);
    std::vector<bool> direct(256, false);
    for (int b : bs) direct[size_t(b)] = true;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = direct[size_t(b)] ? char32_t(b) : char32_t(256 + n++);
      append_utf8(out[size_t(b)], cp);
    }
    return out;
  }();
  return table;
}

std::vector<std::string> GPT2Tokenizer::pretokenize(const std::string& text) {
  std::vector<uint32_t> cp;
  std::vector<size_t> at;
  decode_utf8(text, cp, at);
  std::vector<std::string> out;
  const size_t n = cp.size();
  auto piece = [&](size_t i, size_t j) { out.push_back(text.substr(at[i], at[j] - at[i])); };
  static const char* const kSuffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
  for (size_t i = 0; i < n;) {
    if (cp[i] == '\'') {  // 's 't 're 've 'm 'll 'd
      bool matched = false;
      for (const char* suf : kSuffixes) {
        const size_t len = std::char_traits<char>::length(suf);
        bool ok = true;
        for (size_t k = 0; ok && k < len; ++k) ok = i + 1 + k < n && cp[i + 1 + k] == uint32_t(suf[k]);
        if (ok) {
          piece(i, i + 1 + len);
          i += 1 + len;
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    // an optional space, then a run of letters, of numbers or of other symbols
    const size_t start = (cp[i] == ' ' && i + 1 < n && kind_of(cp[i + 1]) != kSpace) ? i + 1 : i;
    const Kind k = kind_of(cp[start]);
    if (k != kSpace) {
      size_t j = start + 1;
      while (j < n && kind_of(cp[j]) == k) ++j;
      piece(i, j);
      i = j;
      continue;
    }
    // whitespace: "\s+(?!\S)" leaves the last one for the word after it; else "\s+"
    size_t j = i + 1;
    while (j < n && kind_of(cp[j]) == kSpace) ++j;
    if (j < n && j - 1 > i) --j;
    piece(i, j);
    i = j;
  }
  return out;
}

GPT2Tokenizer GPT2Tokenizer::from_files(const std::string& vocab_json, const std::string& merges_txt,
                                        const std::vector<std::string>& special_tokens, const std::string& unk_token) {
  GPT2Tokenizer t;
  t.unk_ = unk_token;
  const std::string text = read_whole_file(vocab_json, "GPT2Tokenizer");
  const json::Json root = json::JsonParser(text, vocab_json + ": invalid JSON").parse_document();
  EMBER_CHECK_VALUE(root.kind == json::Json::Object, vocab_json, ": expected an object of token -> id");
  for (size_t k = 0; k < root.keys.size(); ++k) {
    EMBER_CHECK_VALUE(root.values[k].kind == json::Json::Number, vocab_json, ": the id of '", root.keys[k],
                      "' is not a number");
    const int64_t id = std::stoll(root.values[k].text);
    t.encoder_[root.keys[k]] = id;
    t.decoder_[id] = root.keys[k];
  }
  for (const auto& sp : special_tokens)
    if (t.encoder_.count(sp) && std::find(t.specials_.begin(), t.specials_.end(), sp) == t.specials_.end())
      t.specials_.push_back(sp);
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::istringstream merges(read_whole_file(merges_txt, "GPT2Tokenizer"));
  int64_t rank = 0;
  for (std::string line; std::getline(merges, line);) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    t.ranks_[{line.substr(0, space), line.substr(space + 1)}] = rank++;
  }
  return t;
}

GPT2Tokenizer GPT2Tokenizer::from_pretrained(const std::string& folder) {
  namespace fs = std::filesystem;
  return from_files((fs::path(folder) / "vocab.json").string(), (fs::path(folder) / "merges.txt").string());
}

std::vector<std::string> GPT2Tokenizer::bpe(const std::string& mapped) const {
  if (auto it = cache_.find(mapped); it != cache_.end()) return it->second;
  std::vector<uint32_t> cp;
  std::vector<size_t> at;
  decode_utf8(mapped, cp, at);
  std::vector<std::string> word;
  for (size_t i = 0; i < cp.size(); ++i) word.push_back(mapped.substr(at[i], at[i + 1] - at[i]));
  while (word.size() > 1) {
    int64_t best = -1;
    std::string first, second;  // the lowest-ranked adjacent pair
    for (size_t k = 0; k + 1 < word.size(); ++k)
      if (auto it = ranks_.find({word[k], word[k + 1]}); it != ranks_.end() && (best < 0 || it->second < best)) {
        best = it->second;
        first = word[k];
        second = word[k + 1];
      }
    if (best < 0) break;
    std::vector<std::string> merged;
    for (size_t k = 0; k < word.size();) {
      if (k + 1 < word.size() && word[k] == first && word[k + 1] == second) {
        merged.push_back(first + second);
        k += 2;
      } else {
        merged.push_back(word[k++]);
      }
    }
    word = std::move(merged);
  }
  if (cache_.size() < 100000) cache_[mapped] = word;
  return word;
}

std::vector<int64_t> GPT2Tokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  const auto unk = encoder_.find(unk_);
  auto encode_part = [&](const std::string& part) {
    for (const std::string& p : pretokenize(part)) {
      std::string mapped;
      for (unsigned char b : p) mapped += byte_chars()[b];
      for (const std::string& sym : bpe(mapped)) {
        auto it = encoder_.find(sym);
        EMBER_CHECK_VALUE(it != encoder_.end() || unk != encoder_.end(), "GPT2Tokenizer: '", sym,
                          "' is not in the vocabulary and neither is the unknown token '", unk_, "'");
        ids.push_back(it != encoder_.end() ? it->second : unk->second);
      }
    }
  };
  // split on the special tokens: the earliest occurrence of any, the longest on a tie
  size_t from = 0;
  for (;;) {
    size_t hit = std::string::npos;
    const std::string* which = nullptr;
    for (const auto& sp : specials_) {
      const size_t at = text.find(sp, from);
      if (at < hit) {
        hit = at;
        which = &sp;
      }
    }
    if (!which) break;
    encode_part(text.substr(from, hit - from));
    ids.push_back(encoder_.at(*which));
    from = hit + which->size();
  }
  encode_part(text.substr(from));
  return ids;
}

std::string GPT2Tokenizer::decode(const std::vector<int64_t>& ids) const {
  static const std::unordered_map<std::string, unsigned char> back = [] {
    std::unordered_map<std::string, unsigned char> m;
    for (int b = 0; b < 256; ++b) m[byte_chars()[size_t(b)]] = static_cast<unsigned char>(b);
    return m;
  }();
  std::string out;
  for (int64_t id : ids) {
    auto it = decoder_.find(id);
    EMBER_CHECK_VALUE(it != decoder_.end(), "GPT2Tokenizer::decode: id ", id, " is not in the vocabulary");
    if (std::find(specials_.begin(), specials_.end(), it->second) != specials_.end()) {
      out += it->second;
      continue;
    }
    std::vector<uint32_t> cp;
    std::vector<size_t> at;
    decode_utf8(it->second, cp, at);
    for (size_t i = 0; i < cp.size(); ++i) {
      auto b = back.find(it->second.substr(at[i], at[i + 1] - at[i]));
      EMBER_CHECK_VALUE(b != back.end(), "GPT2Tokenizer::decode: token '", it->second, "' is not byte-level");
      out += char(b->second);
    }
  }
  return out;
}

}  // namespace ember::models

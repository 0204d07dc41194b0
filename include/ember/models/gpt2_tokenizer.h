#pragma once
// GPT-2's byte-level BPE tokenizer in C++ (the Python package's ember.models.GPT2Tokenizer is the
// same algorithm): reads vocab.json and merges.txt, splits text by GPT-2's pre-tokenisation rule
// over Unicode categories, maps each piece's UTF-8 bytes to GPT-2's printable characters and
// applies the merges lowest rank first. Special tokens (by default `<|endoftext|>`; those in the
// vocabulary) are never split. The Python package's ember.models.GPT2Tokenizer calls this one.
//   auto tok = ember::models::GPT2Tokenizer::from_files("vocab.json", "merges.txt");
//   std::vector<int64_t> ids = tok.encode("Hello world");   std::string s = tok.decode(ids);
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::models {

class GPT2Tokenizer {
 public:
  static GPT2Tokenizer from_files(const std::string& vocab_json, const std::string& merges_txt,
                                  const std::vector<std::string>& special_tokens = {"<|endoftext|>"},
                                  const std::string& unk_token = "<|endoftext|>");
  static GPT2Tokenizer from_pretrained(const std::string& folder);  // folder/vocab.json, folder/merges.txt
  std::vector<int64_t> encode(const std::string& text) const;
  // The bytes the ids stand for (UTF-8 unless the ids split a character).
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const { return int64_t(encoder_.size()); }
  // GPT-2's pre-tokenisation: the pieces its regular expression finds, in order (UTF-8).
  static std::vector<std::string> pretokenize(const std::string& text);
  // GPT-2's table: byte b stands for the printable character byte_chars()[b] (UTF-8).
  static const std::vector<std::string>& byte_chars();

 private:
  std::vector<std::string> bpe(const std::string& mapped) const;
  std::unordered_map<std::string, int64_t> encoder_;
  std::unordered_map<int64_t, std::string> decoder_;
  std::map<std::pair<std::string, std::string>, int64_t> ranks_;
  std::vector<std::string> specials_;  // in the vocabulary, longest first
  std::string unk_;  // stands for a symbol missing from the vocabulary (never, with all 256 bytes)
  mutable std::unordered_map<std::string, std::vector<std::string>> cache_;
};

}  // namespace ember::models

// GPT-2's BPE from C++: each line of standard input (text, with "\n" for newlines) becomes a line
// of token ids, then the decoded text.
//   build/gpt2_tokenize FOLDER < text.txt       (FOLDER/vocab.json, FOLDER/merges.txt)
#include <cstdio>
#include <iostream>
#include <string>

#include "ember/models/gpt2_tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER < lines\n", argv[0]);
    return 2;
  }
  try {
    const auto tok = ember::models::GPT2Tokenizer::from_pretrained(argv[1]);
    for (std::string line; std::getline(std::cin, line);) {
      std::string text;  // "\n" in the input stands for a newline
      for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
          text += '\n';
          ++i;
        } else {
          text += line[i];
        }
      }
      const auto ids = tok.encode(text);
      for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%lld", i ? " " : "", (long long)ids[i]);
      std::printf("\n");
      std::printf("%s\n", tok.decode(ids) == text ? "roundtrip ok" : "roundtrip differs");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_tokenize: %s\n", e.what());
    return 1;
  }
  return 0;
}

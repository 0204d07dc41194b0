// GPT-2 from C++: loads a transformers folder (config.json + model.safetensors or
// pytorch_model.bin), prints the prompt's last logits and a greedy (or sampled) continuation with
// its tokens/s.
//   build/gpt2_generate FOLDER 15496,995 [--new 20] [--sample --top-k 40 --temperature 0.8 --seed 0]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "ember/ember.h"
#include "ember/models/gpt2.h"

int main(int argc, char** argv) {
  using namespace ember;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FOLDER TOKEN,TOKEN,... [--new N] [--sample] [--top-k K] [--top-p P] "
                         "[--temperature T] [--seed S]\n", argv[0]);
    return 2;
  }
  try {
    auto model = models::GPT2LMHeadModel::from_pretrained(argv[1]);
    std::vector<int64_t> prompt;
    std::stringstream ss(argv[2]);
    for (std::string tok; std::getline(ss, tok, ',');) prompt.push_back(std::stoll(tok));
    models::GPT2LMHeadModel::GenerateOptions o;
    Generator gen;
    for (int i = 3; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
      if (a == "--new") o.max_new_tokens = std::stoll(next());
      else if (a == "--sample") o.do_sample = true;
      else if (a == "--top-k") o.top_k = std::stoll(next());
      else if (a == "--top-p") o.top_p = std::stod(next());
      else if (a == "--temperature") o.temperature = std::stod(next());
      else if (a == "--seed") gen.manual_seed(std::stoull(next()));
      else throw ValueError("unknown option " + a);
    }
    o.generator = &gen;
    Tensor ids = tensor(prompt, {.dtype = kInt64}).unsqueeze(0);
    Tensor logits;
    {
      NoGradGuard no_grad;
      logits = model->forward(ids).select(1, ids.size(1) - 1);
    }
    std::printf("last logits: sum %.6f, first %.6f, argmax %lld\n", logits.sum().item<double>(),
                logits.select(1, 0).item<double>(), (long long)logits.argmax(-1).item<int64_t>());
    const auto start = std::chrono::steady_clock::now();
    Tensor out = model->generate(ids, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("tokens:");
    for (int64_t i = ids.size(1); i < out.size(1); ++i) std::printf(" %lld", (long long)out[0][i].item<int64_t>());
    std::printf("\n%.1f tokens/s\n", double(out.size(1) - ids.size(1)) / sec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_generate: %s\n", e.what());
    return 1;
  }
  return 0;
}

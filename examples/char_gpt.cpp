// The C++ version of examples/char_gpt.py: a character-level GPT (ember::models::GPT2LMHeadModel)
// trained on the English license texts Debian's base-files ships in /usr/share/common-licenses,
// with a progress bar, a checkpoint (save_pretrained + alphabet.txt, one UTF-8 character per line
// in id order), and sampled text at the end.
//   build/char_gpt [--steps 1500] [--batch 32] [--block 128] [--out runs/char_gpt_cpp] [--sample-only]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "ember/ember.h"
#include "ember/models/gpt2.h"
#include "ember/nn/utils.h"
#include "ember/optim.h"
#include "ember/serialize/serialize.h"
#include "train/progress_bar.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

// UTF-8 text as its characters (each a UTF-8 string).
std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    len = std::min(len, s.size() - i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

std::string load_corpus(const std::string& folder) {
  std::set<fs::path> seen;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& p : files) {
    const fs::path real = fs::canonical(p);
    if (!fs::is_regular_file(real) || !seen.insert(real).second) continue;  // symlinks: once
    std::ifstream f(real, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    if (!text.empty()) text += "\n\n";
    text += s.str();
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 1500, batch = 32, block = 128;
  std::string out = "runs/char_gpt_cpp", corpus_dir = "/usr/share/common-licenses";
  bool sample_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string("0"); };
    if (a == "--steps") steps = std::stoll(next());
    else if (a == "--batch") batch = std::stoll(next());
    else if (a == "--block") block = std::stoll(next());
    else if (a == "--out") out = next();
    else if (a == "--sample-only") sample_only = true;
    else {
      std::fprintf(stderr, "usage: %s [--steps N] [--batch N] [--block N] [--out DIR] [--sample-only]\n", argv[0]);
      return 2;
    }
  }
  try {
    set_num_threads(2);
    std::vector<std::string> alphabet;
    std::shared_ptr<models::GPT2LMHeadModel> model;
    if (sample_only) {
      model = models::GPT2LMHeadModel::from_pretrained(out);
      std::ifstream f(fs::path(out) / "alphabet.txt", std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(f)), {});
      // one character per line; "\n" itself is stored as the two characters backslash n
      std::stringstream lines(all);
      for (std::string line; std::getline(lines, line);) alphabet.push_back(line == "\\n" ? "\n" : line);
    } else {
      const std::string text = load_corpus(corpus_dir);
      const auto chars = characters(text);
      std::set<std::string> distinct(chars.begin(), chars.end());
      alphabet.assign(distinct.begin(), distinct.end());
      std::map<std::string, int64_t> id;
      for (size_t k = 0; k < alphabet.size(); ++k) id[alphabet[k]] = int64_t(k);
      std::vector<int64_t> ids;
      ids.reserve(chars.size());
      for (const auto& c : chars) ids.push_back(id[c]);
      Tensor data = tensor(ids, {.dtype = kInt64});
      std::printf("corpus: %zu characters of %s (%zu distinct)\n", chars.size(), corpus_dir.c_str(), alphabet.size());

      manual_seed(0);
      models::GPT2Config c;
      c.vocab_size = int64_t(alphabet.size());
      c.n_positions = block;
      c.n_embd = 128;
      c.n_layer = 4;
      c.n_head = 4;
      c.attn_pdrop = 0.0;
      c.bos_token_id = c.eos_token_id = 0;
      model = std::make_shared<models::GPT2LMHeadModel>(c);
      model->train();
      optim::AdamW opt(model->parameters(), {.lr = 3e-3, .betas = {0.9, 0.95}, .weight_decay = 0.1});
      optim::OneCycleLR sched(opt, 3e-3, {.total_steps = steps, .pct_start = 0.1});
      Generator gen;
      gen.manual_seed(0);
      const int64_t split = int64_t(double(data.size(0)) * 0.95);
      train_demo::ProgressBar bar(std::cout, "training", steps, true);
      double first = 0, window = 0;
      const auto start = std::chrono::steady_clock::now();
      for (int64_t step = 1; step <= steps; ++step) {
        Tensor starts = randint(0, split - block - 1, {batch}, {.dtype = kInt64}, &gen);
        std::vector<Tensor> rows;
        for (int64_t b = 0; b < batch; ++b) rows.push_back(data.narrow(0, starts[b].item<int64_t>(), block));
        Tensor x = stack(rows);
        Tensor loss = model->loss(x, x);
        opt.zero_grad();
        loss.backward();
        nn::utils::clip_grad_norm_(model->parameters(), 1.0);
        opt.step();
        sched.step();
        const double l = loss.item<double>();
        if (step == 1) first = l;
        window = step == 1 ? l : 0.95 * window + 0.05 * l;
        bar.update(batch, window, 0.0);
        if (step % 500 == 0 || step == steps) {
          model->save_pretrained(out);
          std::string lines;
          for (const auto& ch : alphabet) lines += (ch == "\n" ? "\\n" : ch) + "\n";
          atomic_write_file((fs::path(out) / "alphabet.txt").string(), lines);
        }
      }
      bar.finish();
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      model->eval();
      NoGradGuard no_grad;
      Tensor vstarts = randint(split, data.size(0) - block - 1, {16}, {.dtype = kInt64}, &gen);
      std::vector<Tensor> vrows;
      for (int64_t b = 0; b < 16; ++b) vrows.push_back(data.narrow(0, vstarts[b].item<int64_t>(), block));
      const double val = model->loss(stack(vrows), stack(vrows)).item<double>();
      std::printf("trained in %.0f s: train loss %.3f -> %.3f (running mean), validation %.3f (%.2f bits per character)\n",
                  sec, first, window, val, val / std::log(2.0));
      std::printf("checkpoint: %s/ (config.json, model.safetensors, alphabet.txt)\n", out.c_str());
    }
    // sample from "This License"
    std::map<std::string, int64_t> id;
    for (size_t k = 0; k < alphabet.size(); ++k) id[alphabet[k]] = int64_t(k);
    std::vector<int64_t> prompt;
    for (const auto& ch : characters("This License")) prompt.push_back(id.count(ch) ? id[ch] : 0);
    Generator g;
    g.manual_seed(0);
    Tensor sampled = model->generate(tensor(prompt, {.dtype = kInt64}),
                                     {.max_new_tokens = 400, .do_sample = true, .temperature = 0.8, .top_k = 20,
                                      .generator = &g});
    std::string text;
    for (int64_t i = 0; i < sampled.size(1); ++i) text += alphabet[size_t(sampled[0][i].item<int64_t>())];
    std::printf("sample:\n%s\n", text.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "char_gpt: %s\n", e.what());
    return 1;
  }
  return 0;
}

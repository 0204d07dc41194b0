// bench_optim: time of one optimizer step() over two float32 models:
//   big:   ~1M parameters in four tensors (1024x512, 512, 512x512, 512x512)
//   small: 100 tensors of 32x32 and 32 alternating (~53K parameters): per-tensor overhead
// for SGD with momentum, Adam, AdamW, RMSprop and Adagrad. Gradients are set once; step() does
// not change them, so every step does the same work.
//
//   bench_optim [--threads N] [--steps S] [--model big|small] [--optimizer NAME]
//
// Prints "name median_us" rows (median over S steps after a warm-up); --model and --optimizer
// pick one row (e.g. for a profiler).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim.h"

using namespace ember;

namespace {

std::vector<Tensor> make_params(const std::vector<Shape>& shapes) {
  std::vector<Tensor> ps;
  for (const auto& s : shapes) {
    Tensor p = randn(s).requires_grad_();
    p.set_grad(randn(s) * 1e-2);
    ps.push_back(p);
  }
  return ps;
}

double median_step_us(optim::Optimizer& opt, int steps) {
  for (int i = 0; i < 10; ++i) opt.step();  // warm-up: state creation, first touch
  std::vector<double> t;
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    opt.step();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, steps = 200;
  std::string only_model, only_optimizer;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--model")) only_model = argv[i + 1];
    if (!std::strcmp(argv[i], "--optimizer")) only_optimizer = argv[i + 1];
  }
  set_num_threads(threads);
  manual_seed(0);

  std::vector<Shape> big = {{1024, 512}, {512}, {512, 512}, {512, 512}};
  std::vector<Shape> small;
  for (int i = 0; i < 100; ++i) small.push_back(i % 2 ? Shape{32} : Shape{32, 32});

  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  std::vector<std::pair<std::string, Make>> optimizers = {
      {"sgd_momentum",
       [](auto p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.01, .momentum = 0.9}); }},
      {"adam", [](auto p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{}); }},
      {"adamw", [](auto p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{}); }},
      {"rmsprop", [](auto p) { return std::make_unique<optim::RMSprop>(p, optim::RMSpropOptions{}); }},
      {"adagrad", [](auto p) { return std::make_unique<optim::Adagrad>(p, optim::AdagradOptions{}); }},
  };
  for (const auto& [model, shapes] : {std::pair{"big", big}, std::pair{"small", small}}) {
    if (!only_model.empty() && only_model != model) continue;
    for (const auto& [name, make] : optimizers) {
      if (!only_optimizer.empty() && only_optimizer != name) continue;
      auto opt = make(make_params(shapes));
      std::printf("%s_%s %.1f us\n", name.c_str(), model, median_step_us(*opt, steps));
    }
  }
  return 0;
}

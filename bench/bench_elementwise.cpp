// Elementwise kernels on 16M float32 elements: the timing that guards the CPU loops built on
// the shared formulas (src/ops/elementwise_formulas.h). One line per op: the median and the
// best of the timed calls, in ms.
//
//   build/bench/bench_elementwise [threads=2] [repeats=15]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

using namespace ember;

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 15;
  set_num_threads(threads);
  const int64_t n = int64_t(1) << 24;
  Generator g(0);
  Tensor x = randn({n}, {}, &g), y = randn({n}, {}, &g);
  Tensor xs = x.narrow(0, 0, n / 2).view({n / 4, 2}).select(1, 0);  // stride 2: the strided loop
  Tensor ax = abs(x) + 0.5;
  std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
      {"exp", [&] { return exp(x); }},
      {"sigmoid", [&] { return sigmoid(x); }},
      {"tanh", [&] { return tanh(x); }},
      {"gelu", [&] { return gelu(x); }},
      {"gelu tanh", [&] { return gelu(x, "tanh"); }},
      {"log", [&] { return log(ax); }},
      {"round", [&] { return round(x); }},
      {"add", [&] { return add(x, y); }},
      {"add alpha", [&] { return add(x, y, 2.0); }},
      {"mul", [&] { return mul(x, y); }},
      {"mul scalar", [&] { return mul(x, 3.0); }},
      {"pow 2.5", [&] { return pow(ax, 2.5); }},
      {"pow 2", [&] { return pow(x, 2); }},
      {"pow tensor", [&] { return pow(ax, y); }},
      {"maximum", [&] { return maximum(x, y); }},
      {"remainder", [&] { return remainder(x, y); }},
      {"floor_divide", [&] { return floor_divide(x, y); }},
      {"lt", [&] { return lt(x, y); }},
      {"clamp", [&] { return clamp(x, -0.5, 0.5); }},
      {"lerp 0.3", [&] { return lerp(x, y, 0.3); }},
      {"where", [&] { return where(x.gt(0.0), x, y); }},
      {"exp strided 4M", [&] { return exp(xs); }},
  };
  std::printf("%d threads, %lld float32 elements, %d timed calls each\n", threads, (long long)n, repeats);
  for (auto& [name, fn] : cases) {
    fn();  // warm-up: page in the output allocation path
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      Tensor out = fn();
      auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-16s median %8.2f ms   best %8.2f ms\n", name.c_str(), ms[ms.size() / 2], ms[0]);
  }
  return 0;
}

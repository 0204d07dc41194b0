// bench_ops: times a few representative workloads through ember's public C++ API.
//
//   bench_ops [--threads N] [--repeats R] [--warmup W]
//
// Each workload runs W warm-up times, then R timed times; the median is reported. Output is a
// table, one line per workload: name, value, unit (ms, or us per op for the loops of small
// ops). bench/compare_torch.py parses it and runs the same workloads in PyTorch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

using namespace ember;

namespace {

struct Options {
  int threads = 2;
  int repeats = 7;
  int warmup = 2;
};

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

// Median wall time of fn() in milliseconds.
double median_ms(const std::function<void()>& fn, const Options& o) {
  for (int i = 0; i < o.warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < o.repeats; ++i) {
    double t0 = now_ms();
    fn();
    t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Keeps results observable so the work cannot be optimised away.
volatile double g_sink = 0;
void sink(const Tensor& t) { g_sink = g_sink + double(static_cast<const char*>(t.data_ptr())[0]); }

struct Row {
  std::string name;
  double value;
  const char* unit;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* flag) {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", flag); std::exit(2); }
      return std::atoi(argv[++i]);
    };
    if (!std::strcmp(argv[i], "--threads")) o.threads = next("--threads");
    else if (!std::strcmp(argv[i], "--repeats")) o.repeats = next("--repeats");
    else if (!std::strcmp(argv[i], "--warmup")) o.warmup = next("--warmup");
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--repeats R] [--warmup W]\n", argv[0]);
      return 2;
    }
  }
  o.repeats = std::max(1, o.repeats);
  set_num_threads(o.threads);
  Generator gen(0);
  std::vector<Row> rows;

  {  // Dispatch overhead: a loop of adds on 100-element tensors.
    constexpr int kOps = 1000;
    Tensor a = randn({100}, {}, &gen), b = randn({100}, {}, &gen);
    double ms = median_ms([&] {
      Tensor c;
      for (int i = 0; i < kOps; ++i) c = add(a, b);
      sink(c);
    }, o);
    rows.push_back({"add_100f_x1000", ms * 1000.0 / kOps, "us/op"});
  }
  {  // Memory-bound elementwise: 16M floats.
    Tensor a = randn({16 * 1024 * 1024}, {}, &gen), b = randn({16 * 1024 * 1024}, {}, &gen);
    rows.push_back({"add_16M_f32", median_ms([&] { sink(add(a, b)); }, o), "ms"});
  }
  {  // Compute-bound: 1024^3 sgemm through matmul.
    Tensor a = randn({1024, 1024}, {}, &gen), b = randn({1024, 1024}, {}, &gen);
    rows.push_back({"matmul_1024_f32", median_ms([&] { sink(matmul(a, b)); }, o), "ms"});
  }
  {  // A row-wise reduction + elementwise: softmax over dim 1.
    Tensor x = randn({4096, 1024}, {}, &gen);
    rows.push_back({"softmax_4096x1024_dim1", median_ms([&] { sink(softmax(x, 1)); }, o), "ms"});
  }
  {  // A tiny MLP step: overhead of a short chain of small ops.
    constexpr int kIters = 1000;
    Tensor x = randn({16, 16}, {}, &gen), w = randn({16, 16}, {}, &gen);
    double ms = median_ms([&] {
      Tensor s;
      for (int i = 0; i < kIters; ++i) s = matmul(x, w).relu().sum();
      sink(s);
    }, o);
    rows.push_back({"matmul_relu_sum_16x16_x1000", ms * 1000.0 / kIters, "us/iter"});
  }
  {  // The same step with autograd: record the graph and run backward into w.grad.
    constexpr int kIters = 1000;
    Tensor x = randn({16, 16}, {}, &gen), w = randn({16, 16}, {}, &gen).requires_grad_();
    double ms = median_ms([&] {
      for (int i = 0; i < kIters; ++i) {
        matmul(x, w).relu().sum().backward();
        w.set_grad(Tensor());
      }
    }, o);
    rows.push_back({"matmul_relu_sum_backward_16x16_x1000", ms * 1000.0 / kIters, "us/iter"});
  }

  std::printf("# ember bench_ops: threads=%d, median of %d runs after %d warm-up runs\n", o.threads, o.repeats,
              o.warmup);
  std::printf("%-30s %12s  %s\n", "workload", "ember", "unit");
  for (const auto& r : rows) std::printf("%-30s %12.4f  %s\n", r.name.c_str(), r.value, r.unit);
  return 0;
}

// bench_vs_libtorch: ember's C++ API against PyTorch's C++ API (libtorch, Debian's libtorch-dev
// 1.13), side by side in one process. Each workload is built twice from the same description,
// once per library; timed runs alternate (ember, torch, ember, torch, ...) so both see the same
// machine state, and each side's median per call is reported with the ratio ember/torch.
//
//   bench_vs_libtorch [--threads N] [--repeats R] [--only TEXT] [--profile ember|torch]
//
// --profile SIDE runs only that side's steps, for perf record / callgrind; with ember it also
// prints the self time of each dispatched op (ember's op observers), largest first.
//
// This is the C++ half of issue 8's table (small-op dispatch from C++ is only measurable here);
// bench/compare_python.py is the Python half.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ember/nn.h"
#include "ember/optim.h"
#include "ember/dispatch/op.h"

namespace {

namespace E = ember;
namespace Tch = torch;
using Step = std::function<void()>;

struct Workload {
  const char* name;
  int calls;         // calls per timed run
  const char* unit;  // "us" or "ms" per call
  std::function<Step()> ember_side, torch_side;
};

double seconds_per_call(const Step& step, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) step();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
}

// Self time per dispatched op on the calling thread (nested ops' time is their own, not the
// caller's): a stack of open ops, each accumulating the time its children took.
struct OpTimes {
  struct Open { const char* name; std::chrono::steady_clock::time_point start; double child_s = 0; };
  std::vector<Open> stack;
  std::map<std::string, std::pair<double, long>> self;  // name -> (seconds, calls)
  std::thread::id owner = std::this_thread::get_id();

  E::OpObserver observer() {
    return {[this](const char* n) {
              if (std::this_thread::get_id() == owner) stack.push_back({n, std::chrono::steady_clock::now()});
            },
            [this](const char*) {
              if (std::this_thread::get_id() != owner || stack.empty()) return;
              Open o = stack.back();
              stack.pop_back();
              double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - o.start).count();
              auto& [sec, calls] = self[o.name];
              sec += total - o.child_s;
              ++calls;
              if (!stack.empty()) stack.back().child_s += total;
            }};
  }
  void print(double wall_s) const {
    std::vector<std::pair<std::string, std::pair<double, long>>> rows(self.begin(), self.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    double ops = 0;
    for (auto& r : rows) ops += r.second.first;
    std::printf("%-36s %10s %8s %8s\n", "op (self time)", "ms", "%wall", "calls");
    for (size_t i = 0; i < rows.size() && i < 25; ++i)
      std::printf("%-36s %10.2f %7.1f%% %8ld\n", rows[i].first.c_str(), rows[i].second.first * 1e3,
                  100 * rows[i].second.first / wall_s, rows[i].second.second);
    std::printf("%-36s %10.2f %7.1f%%\n", "all ops", ops * 1e3, 100 * ops / wall_s);
    std::printf("%-36s %10.2f\n", "wall", wall_s * 1e3);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- the workloads, once per library. Sizes follow issue 8.


Step ember_small_add() {
  auto a = E::ones({1}), b = E::ones({1});
  return [=] { E::Tensor c = E::add(a, b); };
}
Step torch_small_add() {
  auto a = Tch::ones({1}), b = Tch::ones({1});
  return [=] { Tch::Tensor c = Tch::add(a, b); };
}

Step ember_tiny_backward() {
  auto x = E::randn({16, 16}).requires_grad_(), w = E::randn({16, 16});
  return [=] { E::matmul(x, w).relu().sum().backward(); };
}
Step torch_tiny_backward() {
  auto x = Tch::randn({16, 16}).requires_grad_(), w = Tch::randn({16, 16});
  return [=] { Tch::matmul(x, w).relu().sum().backward(); };
}

Step ember_add_16m() {
  auto a = E::randn({16 << 20}), b = E::randn({16 << 20});
  return [=] { E::Tensor c = a + b; };
}
Step torch_add_16m() {
  auto a = Tch::randn({16 << 20}), b = Tch::randn({16 << 20});
  return [=] { Tch::Tensor c = a + b; };
}

std::function<Step()> ember_sgemm(int64_t n) {
  return [n] {
    auto a = E::randn({n, n}), b = E::randn({n, n});
    return Step([=] { E::Tensor c = E::matmul(a, b); });
  };
}
std::function<Step()> torch_sgemm(int64_t n) {
  return [n] {
    auto a = Tch::randn({n, n}), b = Tch::randn({n, n});
    return Step([=] { Tch::Tensor c = Tch::matmul(a, b); });
  };
}

Step ember_softmax() {
  auto x = E::randn({4096, 1024});
  return [=] { E::Tensor y = E::softmax(x, 1); };
}
Step torch_softmax() {
  auto x = Tch::randn({4096, 1024});
  return [=] { Tch::Tensor y = Tch::softmax(x, 1); };
}

Step ember_layer_norm() {
  auto x = E::randn({4096, 1024}), w = E::ones({1024}), b = E::zeros({1024});
  return [=] { E::Tensor y = E::nn::functional::layer_norm(x, {1024}, w, b); };
}
Step torch_layer_norm() {
  auto x = Tch::randn({4096, 1024}), w = Tch::ones({1024}), b = Tch::zeros({1024});
  return [=] { Tch::Tensor y = Tch::layer_norm(x, {1024}, w, b); };
}

// The seeds' MLP: Flatten, Linear(784,256), ReLU, Dropout(0.1), Linear(256,10); AdamW.
Step ember_mlp_step() {
  namespace nn = E::nn;
  auto model = std::make_shared<nn::Sequential>(nn::make<nn::Flatten>(), nn::make<nn::Linear>(784, 256),
                                                nn::make<nn::ReLU>(), nn::make<nn::Dropout>(0.1),
                                                nn::make<nn::Linear>(256, 10));
  auto opt = std::make_shared<E::optim::AdamW>(model->parameters(), E::optim::AdamWOptions{.lr = 1e-3, .weight_decay = 1e-4});
  auto x = E::randn({128, 1, 28, 28}), y = E::randint(0, 10, {128});
  return [=] {
    opt->zero_grad();
    auto loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
  };
}
Step torch_mlp_step() {
  namespace nn = Tch::nn;
  auto model = nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Dropout(0.1), nn::Linear(256, 10));
  auto opt = std::make_shared<Tch::optim::AdamW>(model->parameters(),
                                                 Tch::optim::AdamWOptions(1e-3).weight_decay(1e-4));
  auto x = Tch::randn({128, 1, 28, 28}), y = Tch::randint(0, 10, {128});
  return [=]() mutable {
    opt->zero_grad();
    auto loss = Tch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
  };
}

// The seeds' SimpleCNN (two conv-bn-relu-pool stages, two Linear layers); Adam, batch 64.
Step ember_cnn_step() {
  namespace nn = E::nn;
  auto model = std::make_shared<nn::Sequential>(
      nn::make<nn::Conv2d>(1, 32, 3, nn::Conv2dOptions{.padding = std::vector<int64_t>{1, 1}}),
      nn::make<nn::BatchNorm2d>(32), nn::make<nn::ReLU>(), nn::make<nn::MaxPool2d>(std::vector<int64_t>{2, 2}),
      nn::make<nn::Conv2d>(32, 64, 3, nn::Conv2dOptions{.padding = std::vector<int64_t>{1, 1}}),
      nn::make<nn::BatchNorm2d>(64), nn::make<nn::ReLU>(), nn::make<nn::MaxPool2d>(std::vector<int64_t>{2, 2}),
      nn::make<nn::Flatten>(), nn::make<nn::Linear>(64 * 7 * 7, 128), nn::make<nn::ReLU>(), nn::make<nn::Dropout>(0.5),
      nn::make<nn::Linear>(128, 10));
  auto opt = std::make_shared<E::optim::Adam>(model->parameters(), E::optim::AdamOptions{.lr = 1e-3});
  auto x = E::randn({64, 1, 28, 28}), y = E::randint(0, 10, {64});
  return [=] {
    opt->zero_grad();
    auto loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
  };
}
Step torch_cnn_step() {
  namespace nn = Tch::nn;
  auto model = nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2),
      nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::BatchNorm2d(64), nn::ReLU(), nn::MaxPool2d(2),
      nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Dropout(0.5), nn::Linear(128, 10));
  auto opt = std::make_shared<Tch::optim::Adam>(model->parameters(), Tch::optim::AdamOptions(1e-3));
  auto x = Tch::randn({64, 1, 28, 28}), y = Tch::randint(0, 10, {64});
  return [=]() mutable {
    opt->zero_grad();
    auto loss = Tch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
  };
}

// The small GPT of bench/compare_python.py: d_model 128, 4 layers, 4 heads, T=128, batch 8,
// vocab 256, pre-norm blocks with a causal mask, GELU MLP; AdamW lr 3e-4.
constexpr int64_t kVocab = 256, kD = 128, kLayers = 4, kHeads = 4, kBlock = 128, kBatch = 8;

struct EmberBlock : E::nn::Module {
  std::shared_ptr<E::nn::LayerNorm> ln1 = std::make_shared<E::nn::LayerNorm>(kD), ln2 = std::make_shared<E::nn::LayerNorm>(kD);
  std::shared_ptr<E::nn::Linear> qkv = std::make_shared<E::nn::Linear>(kD, 3 * kD), proj = std::make_shared<E::nn::Linear>(kD, kD);
  std::shared_ptr<E::nn::Linear> fc = std::make_shared<E::nn::Linear>(kD, 4 * kD), out = std::make_shared<E::nn::Linear>(4 * kD, kD);
  E::Tensor mask;
  EmberBlock() {
    register_module("ln1", ln1), register_module("ln2", ln2), register_module("qkv", qkv);
    register_module("proj", proj), register_module("fc", fc), register_module("out", out);
    mask = register_buffer("mask", E::ones({kBlock, kBlock}).tril().view({1, 1, kBlock, kBlock}));
  }
  E::Tensor forward(const E::Tensor& x) override {
    const int64_t B = x.sizes()[0], L = x.sizes()[1], C = x.sizes()[2];
    auto parts = qkv->forward(ln1->forward(x)).split(kD, 2);
    auto heads = [&](const E::Tensor& t) { return t.view({B, L, kHeads, C / kHeads}).transpose(1, 2); };
    E::Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    E::Tensor att = E::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(C / kHeads)));
    att = att.masked_fill(mask.eq(0), -INFINITY);
    att = E::softmax(att, -1);
    E::Tensor y = E::matmul(att, v).transpose(1, 2).contiguous().view({B, L, C});
    E::Tensor h = x + proj->forward(y);
    return h + out->forward(E::nn::functional::gelu(fc->forward(ln2->forward(h))));
  }
};

Step ember_gpt_step() {
  namespace nn = E::nn;
  struct Gpt : nn::Module {
    std::shared_ptr<nn::Embedding> tok = std::make_shared<nn::Embedding>(kVocab, kD), pos = std::make_shared<nn::Embedding>(kBlock, kD);
    std::vector<std::shared_ptr<EmberBlock>> blocks;
    std::shared_ptr<nn::LayerNorm> ln = std::make_shared<nn::LayerNorm>(kD);
    std::shared_ptr<nn::Linear> head = std::make_shared<nn::Linear>(kD, kVocab, false);
    Gpt() {
      register_module("tok", tok), register_module("pos", pos);
      for (int i = 0; i < kLayers; ++i) blocks.push_back(std::make_shared<EmberBlock>()), register_module("b" + std::to_string(i), blocks.back());
      register_module("ln", ln), register_module("head", head);
    }
    E::Tensor loss(const E::Tensor& idx, const E::Tensor& tgt) {
      E::Tensor x = tok->forward(idx) + pos->forward(E::arange(idx.sizes()[1], {.dtype = E::kInt64}));
      for (auto& b : blocks) x = b->forward(x);
      return nn::functional::cross_entropy(head->forward(ln->forward(x)).view({-1, kVocab}), tgt.view({-1}));
    }
  };
  auto model = std::make_shared<Gpt>();
  auto opt = std::make_shared<E::optim::AdamW>(model->parameters(), E::optim::AdamWOptions{.lr = 3e-4});
  auto idx = E::randint(0, kVocab, {kBatch, kBlock}), tgt = E::randint(0, kVocab, {kBatch, kBlock});
  return [=] {
    opt->zero_grad();
    model->loss(idx, tgt).backward();
    opt->step();
  };
}

struct TorchBlockImpl : Tch::nn::Module {
  Tch::nn::LayerNorm ln1{Tch::nn::LayerNormOptions({kD})}, ln2{Tch::nn::LayerNormOptions({kD})};
  Tch::nn::Linear qkv{kD, 3 * kD}, proj{kD, kD}, fc{kD, 4 * kD}, out{4 * kD, kD};
  Tch::Tensor mask;
  TorchBlockImpl() {
    register_module("ln1", ln1), register_module("ln2", ln2), register_module("qkv", qkv);
    register_module("proj", proj), register_module("fc", fc), register_module("out", out);
    mask = register_buffer("mask", Tch::ones({kBlock, kBlock}).tril().view({1, 1, kBlock, kBlock}));
  }
  Tch::Tensor forward(const Tch::Tensor& x) {
    const int64_t B = x.size(0), L = x.size(1), C = x.size(2);
    auto parts = qkv->forward(ln1->forward(x)).split(kD, 2);
    auto heads = [&](const Tch::Tensor& t) { return t.view({B, L, kHeads, C / kHeads}).transpose(1, 2); };
    Tch::Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    Tch::Tensor att = Tch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(C / kHeads)));
    att = att.masked_fill(mask.eq(0), -INFINITY);
    att = Tch::softmax(att, -1);
    Tch::Tensor y = Tch::matmul(att, v).transpose(1, 2).contiguous().view({B, L, C});
    Tch::Tensor h = x + proj->forward(y);
    return h + out->forward(Tch::gelu(fc->forward(ln2->forward(h))));
  }
};
TORCH_MODULE(TorchBlock);

Step torch_gpt_step() {
  struct Gpt : Tch::nn::Module {
    Tch::nn::Embedding tok{kVocab, kD}, pos{kBlock, kD};
    std::vector<TorchBlock> blocks;
    Tch::nn::LayerNorm ln{Tch::nn::LayerNormOptions({kD})};
    Tch::nn::Linear head{Tch::nn::LinearOptions(kD, kVocab).bias(false)};
    Gpt() {
      register_module("tok", tok), register_module("pos", pos);
      for (int i = 0; i < kLayers; ++i) blocks.emplace_back(), register_module("b" + std::to_string(i), blocks.back());
      register_module("ln", ln), register_module("head", head);
    }
    Tch::Tensor loss(const Tch::Tensor& idx, const Tch::Tensor& tgt) {
      Tch::Tensor x = tok->forward(idx) + pos->forward(Tch::arange(idx.size(1)));
      for (auto& b : blocks) x = b->forward(x);
      return Tch::nn::functional::cross_entropy(head->forward(ln->forward(x)).view({-1, kVocab}), tgt.view({-1}));
    }
  };
  auto model = std::make_shared<Gpt>();
  auto opt = std::make_shared<Tch::optim::AdamW>(model->parameters(), Tch::optim::AdamWOptions(3e-4));
  auto idx = Tch::randint(0, kVocab, {kBatch, kBlock}), tgt = Tch::randint(0, kVocab, {kBatch, kBlock});
  return [=] {
    opt->zero_grad();
    model->loss(idx, tgt).backward();
    opt->step();
  };
}

std::vector<Workload> workloads() {
  return {
      {"small op: 1-element add", 20000, "us", ember_small_add, torch_small_add},
      {"16x16 matmul+relu+sum+backward", 2000, "us", ember_tiny_backward, torch_tiny_backward},
      {"add, 16M float32 elements", 20, "ms", ember_add_16m, torch_add_16m},
      {"sgemm 1024x1024", 20, "ms", ember_sgemm(1024), torch_sgemm(1024)},
      {"sgemm 4096x4096", 2, "ms", ember_sgemm(4096), torch_sgemm(4096)},
      {"softmax 4096x1024, dim 1", 20, "ms", ember_softmax, torch_softmax},
      {"layer_norm 4096x1024", 20, "ms", ember_layer_norm, torch_layer_norm},
      {"MLP train step (batch 128, AdamW)", 50, "ms", ember_mlp_step, torch_mlp_step},
      {"SimpleCNN train step (batch 64, Adam)", 5, "ms", ember_cnn_step, torch_cnn_step},
      {"GPT train step (d128, 4 layers, T=128, b8, AdamW)", 3, "ms", ember_gpt_step, torch_gpt_step},
  };
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 7;
  const char* only = nullptr;
  std::string profile;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--profile") && i + 1 < argc) profile = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--repeats R] [--only TEXT] [--profile ember|torch]\n", argv[0]);
      return 2;
    }
  }
  E::set_num_threads(threads);
  Tch::set_num_threads(threads);
  std::printf("# ember vs libtorch %s from C++, %d threads, median of %d interleaved runs\n", TORCH_VERSION, threads,
              repeats);
  std::printf("%-44s %12s %12s %7s\n", "workload", "ember", "torch", "ratio");
  double log_sum = 0;
  int n = 0;
  for (const auto& w : workloads()) {
    if (only && !std::strstr(w.name, only)) continue;
    E::manual_seed(0);
    Tch::manual_seed(0);
    if (!profile.empty()) {
      Step s = profile == "torch" ? w.torch_side() : w.ember_side();
      for (int i = 0; i < std::max(1, w.calls / 10); ++i) s();
      OpTimes times;
      int id = profile == "ember" ? E::add_op_observer(times.observer()) : -1;
      double wall = 0;
      for (int r = 0; r < repeats; ++r) wall += seconds_per_call(s, w.calls) * w.calls;
      if (id >= 0) {
        E::remove_op_observer(id);
        std::printf("%s, %d runs of %d calls\n", w.name, repeats, w.calls);
        times.print(wall);
      }
      continue;
    }
    Step e = w.ember_side(), t = w.torch_side();
    for (int i = 0; i < std::max(1, w.calls / 10); ++i) e(), t();  // warm-up: caches, optimizer state
    std::vector<double> te, tt;
    for (int r = 0; r < repeats; ++r) {
      te.push_back(seconds_per_call(e, w.calls));
      tt.push_back(seconds_per_call(t, w.calls));
    }
    double scale = std::strcmp(w.unit, "us") == 0 ? 1e6 : 1e3;
    double me = median(te) * scale, mt = median(tt) * scale, ratio = me / mt;
    log_sum += std::log(ratio);
    ++n;
    std::printf("%-44s %9.2f %s %9.2f %s %7.2f\n", w.name, me, w.unit, mt, w.unit, ratio);
    std::fflush(stdout);
  }
  if (n) std::printf("%-44s %12s %12s %7.2f\n", "geometric mean of ratios", "", "", std::exp(log_sum / n));
  return 0;
}

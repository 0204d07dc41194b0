// ember::compile from C++ (include/ember/compile/): capture through the Tracer layer, the graph
// passes, fused kernels with the eager bits, replay with autograd, guards and breaks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "ember/compile/capture.h"
#include "ember/compile/compile.h"
#include "ember/compile/device_graphs.h"
#include "ember/cuda.h"
#include "ember/export.h"
#include "ember/ember.h"
#include "ember/nn.h"
#include "test_utils.h"

using namespace ember;

namespace {

struct CacheDir {  // the kernels of this test binary in a directory of their own
  CacheDir() {
    dir = std::filesystem::temp_directory_path() / ("ember_compile_test_" + std::to_string(::getpid()));
    setenv("EMBER_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDir() { std::filesystem::remove_all(dir); }
  std::filesystem::path dir;
};
const CacheDir cache_dir;

std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  Tensor a = (x * y + 1.0).tanh().sigmoid() * 2.0 - x;
  return {a.exp() / (y.abs() + 0.5)};
}

// A model trained eagerly beside a copy of it compiled with mode="reduce-overhead": outputs and
// gradients must agree at every step (the compiled one's from its third call replayed as device
// graphs: a forward and a backward graph behind one autograd node).
std::shared_ptr<CompiledModule> train_reduce_overhead(Device device, int steps) {
  manual_seed(1);
  auto make = [] {
    auto m = std::make_shared<nn::Sequential>();
    m->push_back(std::make_shared<nn::Linear>(6, 16));
    m->push_back(std::make_shared<nn::Tanh>());
    m->push_back(std::make_shared<nn::Linear>(16, 3));
    return m;
  };
  auto model = make(), ref = make();
  ref->load_state_dict(model->state_dict());
  model->to(device);
  ref->to(device);
  CompileOptions options;
  options.mode = "reduce-overhead";
  auto fast = compile(model, options);
  for (int step = 0; step < steps; ++step) {
    model->zero_grad();
    ref->zero_grad();
    Tensor x = randn({5, 6}, {.device = device});
    Tensor out = fast->forward(x), want = ref->forward(x);
    EXPECT_TRUE(out.allclose(want, 1e-5, 1e-6)) << "step " << step;
    out.pow(2).sum().backward();
    want.pow(2).sum().backward();
    auto params = model->parameters(), ref_params = ref->parameters();
    NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(params[i].grad().allclose(ref_params[i].grad(), 1e-5, 1e-6)) << "step " << step << " param " << i;
      params[i].sub_(params[i].grad() * 0.1);  // an optimizer's in-place update, read by the next replay
      ref_params[i].sub_(ref_params[i].grad() * 0.1);
    }
  }
  return fast;
}

}  // namespace

TEST(Compile, ReduceOverheadTrainsThroughDeviceGraphs) {
  // on the CPU the device graphs are emulated (device_graphs.h): the static tensors, the replay
  // order and the autograd node are the real ones; the GPU test below captures real CUDA graphs
  struct Emulated {
    bool before = compiler::detail::set_emulated_device_graphs(true);
    ~Emulated() { compiler::detail::set_emulated_device_graphs(before); }
  } emulated;
  auto fast = train_reduce_overhead(Device("cpu"), 5);
  const CompileStats& stats = fast->function().stats();
  EXPECT_EQ(stats.device_graph_captures, 1);
  EXPECT_EQ(stats.device_graph_replays, 3);
  EXPECT_NE(fast->function().explain().find("device graphs (forward and backward)"), std::string::npos);
  // a backward whose activations a later replay overwrote
  Tensor x = randn({5, 6});
  Tensor kept = fast->forward(x).sum();
  kept.backward({}, /*retain_graph=*/true);
  fast->forward(x).sum().backward();
  EXPECT_THROW_MSG(kept.backward(), Error, "overwrote");
}

TEST(Compile, ReduceOverheadTrainsThroughCudaGraphs) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA GPU on this machine: the CUDA backend compiled but did not run";
  auto fast = train_reduce_overhead(Device("cuda"), 5);
  EXPECT_EQ(fast->function().stats().device_graph_captures, 1);
  EXPECT_EQ(fast->function().stats().device_graph_replays, 3);
}

TEST(Compile, CaptureRecordsOpsAndPassesCleanUp) {
  Tensor x = randn({4, 5}), y = randn({4, 5});
  compiler::CaptureSession s({x, y});
  Tensor unused = x.cos();  // dead
  Tensor a = x * y, b = x * y;  // a common subexpression
  Tensor c = ones({4, 5}) * 3.0;  // folded into a constant
  Tensor out = a + b + c;
  compiler::Graph g = s.finish({out});
  EXPECT_EQ(s.break_reason(), "");
  EXPECT_GE(g.dead_removed, 1);
  EXPECT_EQ(g.common_merged, 1);
  EXPECT_GE(g.constants_folded, 1);
  compiler::CompiledGraph cg(std::move(g));
  Tensor x2 = randn({4, 5}), y2 = randn({4, 5});
  EXPECT_TRUE(cg.run({x2, y2})[0].equal(x2 * y2 + x2 * y2 + ones({4, 5}) * 3.0));
  EXPECT_EQ(cg.fused_kernels(), 1);
  EXPECT_NE(cg.describe().find("fused kernel 0"), std::string::npos);
}

TEST(Compile, FunctionFusesWithTheEagerBitsAndRecapturesPerSignature) {
  auto f = compile(chain);
  for (Shape s : {Shape{1000}, Shape{37, 3}, Shape{1000}}) {
    Tensor x = randn(s), y = randn(s);
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(f({x, y})[0].equal(chain({x, y})[0]));
  }
  EXPECT_EQ(f.stats().captures, 2);
  EXPECT_EQ(f.stats().graph_runs, 4);
  EXPECT_NE(f.explain().find("fused kernel"), std::string::npos);
}

TEST(Compile, ModuleTrainsThroughTheReplayedGraph) {
  manual_seed(0);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(6, 8));
  model->push_back(std::make_shared<nn::Tanh>());
  model->push_back(std::make_shared<nn::Linear>(8, 2));
  auto fast = compile(model);
  Tensor x = randn({5, 6});
  for (int step = 0; step < 3; ++step) {
    model->zero_grad();
    model->forward(x).pow(2).sum().backward();
    std::vector<Tensor> want;
    for (auto& p : model->parameters()) want.push_back(p.grad().clone());
    model->zero_grad();
    fast->forward(x).pow(2).sum().backward();
    auto params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].grad().allclose(want[i], 0, 0));
  }
  EXPECT_EQ(fast->function().stats().captures, 1);
  EXPECT_EQ(fast->named_parameters()[0].first, "_orig_mod.0.weight");
  NoGradGuard no_grad;  // another signature (grad mode): the Tanh chain fuses there
  EXPECT_TRUE(fast->forward(x).equal(model->forward(x)));
  EXPECT_TRUE(fast->forward(x).equal(model->forward(x)));
  EXPECT_EQ(fast->function().stats().captures, 2);
}

TEST(Compile, BreaksRunEagerlyAndFullgraphRaises) {
  auto branchy = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].sum().item<double>() > 0 ? in[0] * 2.0 : in[0] - 1.0};
  };
  auto f = compile(branchy);
  Tensor pos = ones({3}), neg = -ones({3});
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(f({pos})[0].equal(pos * 2.0));
    EXPECT_TRUE(f({neg})[0].equal(neg - 1.0));
  }
  ASSERT_FALSE(f.stats().breaks.empty());
  EXPECT_NE(f.stats().breaks[0].find("item()"), std::string::npos);
  auto strict = compile(branchy, {.fullgraph = true});
  EXPECT_THROW(strict({pos}), Error);
  EXPECT_THROW(compile(branchy, {.mode = "fastest"}), ValueError);
}

TEST(Compile, ChainsThatNeedGradientsFuseWithAGeneratedBackward) {
  auto f = [](const std::vector<Tensor>& in) {
    Tensor h = (in[0] * in[1] + in[2]).tanh() * 2.0 - in[0];
    return std::vector<Tensor>{h.sigmoid() * h};
  };
  auto fast = compile(f);
  manual_seed(9);
  Tensor x0 = randn({16, 8}), w0 = randn({16, 8}), b0 = randn({8});
  auto grads = [&](const CompiledFunction::Fn& fn) {
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    Tensor out = fn({x, w, b})[0];
    (out * out).sum().backward();
    return std::vector<Tensor>{out.detach(), x.grad(), w.grad(), b.grad()};
  };
  const auto want = grads(f);
  for (int i = 0; i < 2; ++i) {
    const auto got = grads([&](const std::vector<Tensor>& in) { return fast(in); });
    EXPECT_TRUE(got[0].equal(want[0]));
    for (size_t k = 1; k < got.size(); ++k) {
      EXPECT_EQ(got[k].sizes(), want[k].sizes());
      EXPECT_TRUE(got[k].allclose(want[k], 1e-5, 1e-6)) << k;
    }
  }
  EXPECT_NE(fast.explain().find("with a fused backward"), std::string::npos);
}

// An RMSNorm written out (pow, mean over the last dim, add, rsqrt, two muls) is one row kernel,
// forward and backward, equal to eager to float rounding.
TEST(Compile, RowReductionsFuseWithTheirElementwiseNodes) {
  auto f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * (in[0].pow(2).mean({-1}, true) + 1e-6).rsqrt() * in[1]};
  };
  auto fast = compile(f);
  manual_seed(12);
  Tensor x0 = randn({6, 5, 40}), w0 = randn({40});
  auto run = [&](const CompiledFunction::Fn& fn) {
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    Tensor out = fn({x, w})[0];
    (out * out).sum().backward();
    return std::vector<Tensor>{out.detach(), x.grad(), w.grad()};
  };
  const auto want = run(f);
  for (int i = 0; i < 2; ++i) {
    const auto got = run([&](const std::vector<Tensor>& in) { return fast(in); });
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].sizes(), want[k].sizes());
      EXPECT_TRUE(got[k].allclose(want[k], 1e-4, 1e-5)) << k;
    }
  }
  EXPECT_NE(fast.explain().find("(row reductions) (with a fused backward)"), std::string::npos) << fast.explain();
}

TEST(Export, ProgramRoundTripsThroughAFileAndRunsWithoutPython) {
  manual_seed(10);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(6, 8));
  model->push_back(std::make_shared<nn::Tanh>());
  model->push_back(std::make_shared<nn::Linear>(8, 3));
  NoGradGuard no_grad;
  Tensor example = randn({4, 6});
  compiler::CaptureSession session({example});
  Tensor out = model->forward(example);
  exporting::Program program(session.finish({out}), {{"note", "test"}});
  const auto path = std::filesystem::temp_directory_path() / ("ember_export_" + std::to_string(::getpid()) + ".ember");
  program.save(path.string());
  const exporting::Program loaded = exporting::load(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.metadata().at("note"), "test");
  for (int i = 0; i < 3; ++i) {
    Tensor x = randn({4, 6});
    EXPECT_TRUE(loaded.run({x})[0].allclose(model->forward(x), 1e-6, 1e-6));
  }
  EXPECT_THROW(loaded.run({randn({5, 6})}), ValueError);  // not the exported shape
  std::string bytes = program.save_to_bytes();
  EXPECT_THROW(exporting::load_from_bytes(bytes.substr(0, bytes.size() / 2)), Error);
  const auto at = bytes.find("\"addmm\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 7, "\"abort\"");  // an op that does not exist (the zip's CRC catches it first)
  EXPECT_THROW(exporting::load_from_bytes(bytes), Error);
}

// A dynamic batch written by hand (Python's export fits these from captures at several sizes):
// the input's dim 0, the views' first sizes and every value's first size are
// polynomials in `batch`; the loaded program specialises its graph to each call's batch.
TEST(Export, SymbolicBatchSpecialisesPerCall) {
  manual_seed(11);
  NoGradGuard no_grad;
  Tensor w = randn({6, 2});
  Tensor example = randn({4, 6});
  compiler::CaptureSession session({example});
  Tensor out = (example.reshape({8, 3}).sigmoid() * 2.0).reshape({4, 6}).matmul(w);
  compiler::Graph g = session.finish({out}, /*simplify=*/false);
  auto sym = std::make_shared<compiler::SymbolicShapes>();
  sym->names = {"batch"};
  sym->min = {1};
  sym->max = {64};
  sym->example = {4};
  auto poly = [](int64_t coef) { return compiler::SymPoly{{compiler::SymTerm{coef, {1}}}}; };
  for (size_t v = 0; v < g.values.size(); ++v) {  // every value whose first dim is the batch (or twice it)
    const auto& info = g.values[v];
    if (info.kind == compiler::ValueKind::Constant || info.sizes.empty()) continue;
    const int64_t per = info.sizes[0] / 4;
    sym->sites.push_back({compiler::SymSite::Size, int32_t(v), 0, -1, poly(per)});
  }  // (the strides here are the row lengths, which the batch does not change)
  for (size_t n = 0; n < g.nodes.size(); ++n) {  // the reshapes' first sizes
    auto& node = g.nodes[n];
    if (std::string(node.op) != "view") continue;  // (reshape of a contiguous tensor is a view)
    sym->sites.push_back({compiler::SymSite::Arg, int32_t(n), 1, 0, poly(node.args[1].ints[0] / 4)});
  }
  exporting::Program program(g, {}, sym);
  const exporting::Program loaded = exporting::load_from_bytes(program.save_to_bytes());
  ASSERT_NE(loaded.symbolic(), nullptr);
  for (int64_t b : {1, 4, 7, 64, 9, 33}) {
    Tensor x = randn({b, 6});
    Tensor want = (x.reshape({2 * b, 3}).sigmoid() * 2.0).reshape({b, 6}).matmul(w);
    EXPECT_TRUE(loaded.run({x})[0].allclose(want, 1e-6, 1e-6)) << b;
  }
  // the first new batch (1) is compiled; at the second a template is fitted on batches 4, 5 and 6,
  // and 7, 64, 9 and 33 renumber it (compiled_template.h: fit_template)
  const auto stats = loaded.specialisation_stats();
  EXPECT_EQ(stats.renumbered, 4);
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.not_fitted, "");
  EXPECT_THROW(loaded.run({randn({65, 6})}), ValueError);  // outside [1, 64]
  EXPECT_THROW(loaded.run({randn({5, 4})}), ValueError);   // dim 1 is not dynamic
  // a site that does not hold at the example is refused at load
  sym->sites.back().poly = poly(3);
  EXPECT_THROW(exporting::Program(g, {}, sym), ValueError);
}

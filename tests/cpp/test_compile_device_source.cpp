// ember.compile's CUDA kernels without a GPU: a graph captured on the CPU is retargeted to cuda:0
// (its values' devices rewritten, as a capture on a GPU would record them), fusion forms device
// groups with CUDA source (src/compile/codegen_device_source.cpp), and NVRTC compiles that source
// to a cubin for sm_90 (src/cuda/nvrtc_codegen.cpp). The same source also runs on the host: built
// by the system compiler behind a few lines that define CUDA's qualifiers and a one-thread grid,
// its grid-stride loops visit every element, so its values and gradients are checked against
// eager's here (operand kinds, the host and device numbers, 16-bit loads and stores, where each
// gradient goes). The Python tests (test_compile.py, CUDA cases) run the real kernels on a GPU.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "autograd/record.h"
#include "compile/fusion.h"
#include "compile/kernel_cache.h"
#include "ember/compile/capture.h"
#include "ember/compile/compiled_graph.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"
#if EMBER_CUDA
#include "cuda/nvrtc_codegen.h"
#endif

using namespace ember;

namespace {

// x*w + b (b a bias over the last dim), tanh, gelu, times a 0-dim tensor, max with a number,
// over 6x5: a chain with a full, a bias, a host-number and a device-number operand.
compiler::Graph captured_chain(bool with_grad) {
  Tensor x = randn({6, 5}, {.requires_grad = with_grad}), w = randn({6, 5}), b = randn({5});
  Tensor s = scalar_tensor(Scalar(0.75));
  compiler::CaptureSession session({x, w, b, s});
  Tensor y = (x * w + b).tanh();
  y = ember::nn::functional::gelu(y, "tanh") * s;
  y = ember::maximum(y * 2.0, zeros({})) - x.sigmoid();
  return session.finish({y});
}

// A bfloat16 (or float16) chain with casts to and from float32 (autocast's shape), with gradients.
compiler::Graph captured_half_chain(DType dt = kBFloat16) {
  Tensor x = randn({6, 5}, {.dtype = dt, .requires_grad = true}), y = randn({6, 5}, {.dtype = dt});
  compiler::CaptureSession session({x, y});
  Tensor a = (x * y + 1.0).tanh();
  Tensor out = a.to(kFloat32).sigmoid() * 2.0 + a.to(kFloat32);
  return session.finish({out, a * 3.0});
}

// Every value that is not a Python number moves to cuda:0.
void retarget_to_cuda(compiler::Graph& g) {
  for (auto& v : g.values)
    if (!v.wrapped_number) v.device = Device(DeviceType::CUDA, 0);
}

}  // namespace

TEST(CompileDeviceSource, CudaGroupsGetSourceThatNvrtcCompiles) {
#if !EMBER_CUDA
  GTEST_SKIP() << "built without CUDA: no device kernel builder";
#else
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  for (bool with_grad : {false, true}) {
    compiler::Graph g = captured_chain(with_grad);
    retarget_to_cuda(g);
    const auto groups = compiler::find_fusion_groups(g);
    ASSERT_EQ(groups.size(), 1u) << g.str();
    const auto& grp = groups[0];
    EXPECT_TRUE(grp.device.is_cuda());
    EXPECT_EQ(grp.needs_grad, with_grad);
    EXPECT_GE(grp.nodes.size(), 7u);
    EXPECT_NE(grp.source.find("extern \"C\" __global__ void __launch_bounds__(256) ember_fused("), std::string::npos);
    EXPECT_EQ(grp.source.find("ember_fused_backward") != std::string::npos, with_grad);
    EXPECT_NE(grp.source.find("p.s["), std::string::npos);  // the host number, passed by value
    EXPECT_NE(grp.source.find("% I(p.inner)"), std::string::npos);  // the bias
    if (std::getenv("EMBER_TEST_PRINT_SOURCE")) std::cout << grp.source << "\n";
    const std::string cubin = cuda::compile_to_cubin(grp.source, "sm_90");
    EXPECT_GT(cubin.size(), 1000u);
    EXPECT_EQ(cubin.compare(0, 4, "\x7f" "ELF"), 0);
  }
  for (DType dt : {kBFloat16, kFloat16}) {
    compiler::Graph g = captured_half_chain(dt);
    retarget_to_cuda(g);
    const auto groups = compiler::find_fusion_groups(g);
    ASSERT_EQ(groups.size(), 1u) << g.str();
    EXPECT_NE(groups[0].source.find(dt == kBFloat16 ? "ember_bf16_round(" : "ember_f16_round("), std::string::npos);
    EXPECT_NE(groups[0].source.find("unsigned short* __restrict__ out"), std::string::npos);
    if (std::getenv("EMBER_TEST_PRINT_SOURCE")) std::cout << groups[0].source << "\n";
    EXPECT_GT(cuda::compile_to_cubin(groups[0].source, "sm_90").size(), 1000u);
  }
  // a compile error comes back with NVRTC's log and the source
  try {
    cuda::compile_to_cubin("extern \"C\" __global__ void ember_fused() { undefined_name(); }", "sm_90");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
  }
#endif
}

TEST(CompileDeviceSource, CpuHalfChainsFuseWithTheEagerBits) {
  for (DType dt : {kBFloat16, kFloat16}) {
    compiler::Graph g = captured_half_chain(dt);
    compiler::CompiledGraph cg(g);
    EXPECT_EQ(cg.fused_kernels(), 1);
    // (x20: float16's overflow to inf and its subnormals are reached too)
    Tensor x = (randn({6, 5}) * 20.0).to(dt), y = (randn({6, 5}) * 20.0).to(dt);
    auto out = cg.run({x, y});
    Tensor a = (x * y + 1.0).tanh();
    EXPECT_TRUE(out[0].equal(a.to(kFloat32).sigmoid() * 2.0 + a.to(kFloat32)));
    EXPECT_TRUE(out[1].equal(a * 3.0));
    EXPECT_EQ(out[1].dtype(), dt);
  }
}

TEST(CompileDeviceSource, CpuGraphsStayOnTheCpu) {
  compiler::Graph g = captured_chain(false);
  const auto groups = compiler::find_fusion_groups(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_TRUE(groups[0].device.is_cpu());
  EXPECT_NE(groups[0].source.find("extern \"C\" void ember_fused("), std::string::npos);
}

namespace {

// CUDA's qualifiers and built-ins for the host: one block of one thread, so a grid-stride loop
// runs over every element. The kernels are renamed, and host entries pack their parameters.
const char* const kHostShim =
    "#include <bit>\n#include <cstddef>\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n#define __launch_bounds__(n)\n"
    "#define __restrict__ __restrict\n"
    "struct ember_dim3 { unsigned x; };\n"
    "static const ember_dim3 blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};\n"
    "inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }\n"
    "inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }\n"
    "#define ember_fused ember_device_forward\n#define ember_fused_backward ember_device_backward\n";

const char* const kHostEntries =
    "#undef ember_fused\n#undef ember_fused_backward\n"
    "template <class P> void pack(P& p, long long numel, long long inner, const void* const* in, const float* s) {\n"
    "  p.numel = numel; p.inner = inner;\n"
    "  for (size_t k = 0; k < sizeof(p.in) / sizeof(p.in[0]); ++k) { p.in[k] = in[k]; p.s[k] = s[k]; }\n"
    "}\n"
    "extern \"C\" void host_forward(long long numel, long long inner, const void* const* in, void* const* out,\n"
    "                             const float* s) {\n"
    "  forwardParams p; pack(p, numel, inner, in, s);\n"
    "  for (size_t k = 0; k < sizeof(p.out) / sizeof(p.out[0]); ++k) p.out[k] = out[k];\n"
    "  ember_device_forward(p);\n}\n";

const char* const kHostBackwardEntry =
    "extern \"C\" void host_backward(long long numel, long long inner, const void* const* in, const void* const* gout,\n"
    "                              void* const* gin, const float* s) {\n"
    "  backwardParams p; pack(p, numel, inner, in, s);\n"
    "  for (size_t k = 0; k < sizeof(p.gout) / sizeof(p.gout[0]); ++k) p.gout[k] = gout[k];\n"
    "  for (size_t k = 0; k < sizeof(p.gin) / sizeof(p.gin[0]); ++k) p.gin[k] = gin[k];\n"
    "  ember_device_backward(p);\n}\n";

using HostForward = void (*)(long long, long long, const void* const*, void* const*, const float*);
using HostBackward = void (*)(long long, long long, const void* const*, const void* const*, void* const*, const float*);

// The device source built for the host (the process keeps the library loaded).
std::pair<HostForward, HostBackward> build_on_host(const std::string& device_source, bool backward) {
  namespace fs = std::filesystem;
  static int serial = 0;
  const fs::path dir = fs::temp_directory_path() / ("ember_device_on_host_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string stem = (dir / ("k" + std::to_string(serial++))).string();
  std::ofstream(stem + ".cpp") << kHostShim << device_source << kHostEntries << (backward ? kHostBackwardEntry : "");
  const auto tc = compiler::toolchain();
  const std::string src_dir = (fs::path(tc.include_dir).parent_path() / "src").string();
  const std::string cmd = tc.cxx + " -O1 -std=c++20 -fPIC -shared -ffp-contract=off -I" + src_dir + " -I" +
                          tc.include_dir + " -o " + stem + ".so " + stem + ".cpp 2> " + stem + ".log";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(stem + ".log");
    ADD_FAILURE() << "the device source does not build on the host:\n" << std::string(std::istreambuf_iterator<char>(log), {});
    return {nullptr, nullptr};
  }
  void* lib = dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  if (!lib) return {nullptr, nullptr};
  return {reinterpret_cast<HostForward>(dlsym(lib, "host_forward")),
          backward ? reinterpret_cast<HostBackward>(dlsym(lib, "host_backward")) : nullptr};
}

// Every value of a CPU graph, by replaying its nodes from the captured inputs.
std::vector<Tensor> replay_values(const compiler::Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> v(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) v[size_t(g.inputs[i])] = inputs[i];
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == compiler::ValueKind::Constant) v[i] = g.values[i].constant;
  for (const auto& n : g.nodes) {
    std::vector<Tensor> in;
    for (auto id : n.inputs) in.push_back(id == compiler::kNoValue ? Tensor() : v[size_t(id)]);
    auto out = n.replay(in);
    for (size_t k = 0; k < n.outputs.size(); ++k) v[size_t(n.outputs[k])] = out[k];
  }
  return v;
}

// Runs each device group of `retargeted` (a copy of `cpu` with its values on cuda:0) on the host:
// its outputs against the CPU replay, and its backward's gradients against autograd over the
// group's nodes replayed on the CPU.
void check_device_groups_on_host(const compiler::Graph& cpu, const std::vector<Tensor>& inputs, double tol,
                                 const std::string& expect_in_source = "") {
  compiler::Graph g = cpu;
  retarget_to_cuda(g);
  const auto groups = compiler::find_fusion_groups(g);
  ASSERT_FALSE(groups.empty()) << g.str();
  bool seen = expect_in_source.empty();
  for (const auto& grp : groups) seen = seen || grp.source.find(expect_in_source) != std::string::npos;
  EXPECT_TRUE(seen) << "no group's source has " << expect_in_source;
  const std::vector<Tensor> values = replay_values(cpu, inputs);
  for (const auto& grp : groups) {
    ASSERT_TRUE(grp.device.is_cuda());
#if EMBER_CUDA
    std::string why;  // (and NVRTC takes the same source)
    if (cuda::nvrtc_available(&why)) EXPECT_GT(cuda::compile_to_cubin(grp.source, "sm_90").size(), 1000u);
#endif
    auto [forward, backward] = build_on_host(grp.source, grp.needs_grad);
    ASSERT_TRUE(forward && (backward || !grp.needs_grad));
    const int64_t numel = compiler::fusion_detail::numel(grp.sizes);
    // operands: a pointer, or for a number on the host its value in s[k] (as the launch passes it)
    std::vector<const void*> in;
    std::vector<float> s;
    std::vector<Tensor> operands;
    for (const auto& o : grp.inputs) {
      const Tensor& t = values[size_t(o.value)];
      operands.push_back(t);
      const bool host_number = o.kind == compiler::FusedOperand::kScalar && g.values[size_t(o.value)].device.is_cpu();
      in.push_back(host_number ? nullptr : t.data_ptr());
      s.push_back(host_number ? float(t.item<double>()) : 0.0f);
    }
    std::vector<Tensor> outs;
    std::vector<void*> out_ptr;
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      outs.push_back(empty(grp.output_sizes[k], {.dtype = g.values[size_t(grp.outputs[k])].dtype}));
      out_ptr.push_back(outs.back().data_ptr());
    }
    forward(numel, grp.inner > 0 ? grp.inner : 1, in.data(), out_ptr.data(), s.data());
    for (size_t k = 0; k < outs.size(); ++k) {
      const Tensor& want = values[size_t(grp.outputs[k])];
      EXPECT_TRUE(outs[k].to(kFloat32).allclose(want.to(kFloat32), tol, tol))
          << "output " << k << ":\n" << outs[k] << "\nwant\n" << want << "\n" << grp.source;
    }
    if (!grp.needs_grad) continue;
    // expected: autograd over the group's nodes replayed from leaves standing for its operands
    std::vector<Tensor> local = values, leaves;
    std::vector<size_t> wanting;
    for (size_t k = 0; k < grp.inputs.size(); ++k)
      if (cpu.values[size_t(grp.inputs[k].value)].requires_grad) {
        local[size_t(grp.inputs[k].value)] = operands[k].detach().requires_grad_(true);
        leaves.push_back(local[size_t(grp.inputs[k].value)]);
        wanting.push_back(k);
      }
    for (int32_t i : grp.nodes) {
      const auto& n = cpu.nodes[size_t(i)];
      std::vector<Tensor> nin;
      for (auto id : n.inputs) nin.push_back(local[size_t(id)]);
      auto r = n.replay(nin);
      for (size_t k = 0; k < n.outputs.size(); ++k) local[size_t(n.outputs[k])] = r[k];
    }
    std::vector<Tensor> gouts, grad_outputs, targets;
    std::vector<const void*> gout_ptr;
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      gouts.push_back(randn(grp.output_sizes[k]));
      gout_ptr.push_back(gouts.back().data_ptr());
      targets.push_back(local[size_t(grp.outputs[k])]);
      grad_outputs.push_back(gouts.back().to(targets.back().dtype()));
    }
    const auto want = autograd::grad(targets, leaves, grad_outputs, false, false, /*allow_unused=*/true);
    std::vector<Tensor> full(grp.inputs.size());
    std::vector<void*> gin_ptr(grp.inputs.size(), nullptr);
    for (size_t k : wanting) {
      full[k] = zeros(grp.sizes);  // (the device writes every operand's gradient full-size)
      gin_ptr[k] = full[k].data_ptr();
    }
    backward(numel, grp.inner > 0 ? grp.inner : 1, in.data(), gout_ptr.data(), gin_ptr.data(), s.data());
    for (size_t w = 0; w < wanting.size(); ++w) {
      const size_t k = wanting[w];
      Tensor got = autograd::sum_to(full[k], operands[k].sizes());
      Tensor expected = want[w].defined() ? want[w].to(kFloat32) : zeros_like(got);
      EXPECT_TRUE(got.allclose(expected, tol, tol)) << "gradient of operand " << k << ":\n" << got << "\nwant\n"
                                                      << expected << "\n" << grp.source;
    }
  }
}

}  // namespace

TEST(CompileDeviceSource, DeviceKernelsRunOnTheHostWithEagerValuesAndGradients) {
  manual_seed(3);
  {  // a full operand wanting a gradient, a bias wanting one, a 0-dim tensor, Python numbers
    Tensor x = randn({6, 5}, {.requires_grad = true}), w = randn({6, 5}), b = randn({5}, {.requires_grad = true});
    Tensor s = scalar_tensor(Scalar(0.75));
    compiler::CaptureSession session({x, w, b, s});
    Tensor y = (x * w + b).tanh();
    y = ember::nn::functional::gelu(y, "tanh") * s;
    y = ember::maximum(y * 2.0, zeros({})) - x.sigmoid();
    compiler::Graph cpu = session.finish({y, (x / (b.abs() + 0.5)).exp()});
    check_device_groups_on_host(cpu, {x, w, b, s}, 1e-5);
  }
  {  // 0-dim operands wanting gradients, over more elements than a row of the bias
    Tensor x = randn({3, 4, 7}, {.requires_grad = true}), t = randn({}, {.requires_grad = true});
    Tensor b = randn({4, 7}, {.requires_grad = true});
    compiler::CaptureSession session({x, t, b});
    Tensor y = ((x * t).sin() + b).pow(2.0) * (t + 1.0);
    compiler::Graph cpu = session.finish({y});
    check_device_groups_on_host(cpu, {x, t, b}, 1e-5);
  }
  {  // every fusible op's formula and derivative, on values inside each one's domain
    Tensor x = randn({4, 9}, {.requires_grad = true}), y = randn({4, 9}, {.requires_grad = true});
    compiler::CaptureSession session({x, y});
    Tensor u = x.tanh() * 0.5;                  // in (-0.5, 0.5)
    Tensor p = u.sigmoid() + 0.25;              // in (0.25, 1.25)
    Tensor a = u.exp() + u.exp2() + p.log() + u.log1p() + u.expm1() + p.log2() + p.log10() + p.sqrt() + p.rsqrt();
    Tensor b = u.sin() + u.cos() + u.tan() + u.asin() + u.acos() + u.atan() + u.sinh() + u.cosh() + y.sigmoid();
    Tensor c = ember::nn::functional::silu(y) + y.erf() + p.reciprocal() + y.neg() + y.abs() + y.square() + y.relu() +
               y.sign();
    Tensor d = ember::maximum(a, b) * ember::minimum(b, c) + ember::atan2(c, p) + (a / p).pow(2.0) + ember::pow(p, u);
    compiler::Graph cpu = session.finish({d});
    check_device_groups_on_host(cpu, {x, y}, 1e-4);
  }
  for (DType dt : {kBFloat16, kFloat16}) {  // 16-bit values rounded where made, widened exactly
    Tensor x = randn({6, 5}, {.dtype = dt, .requires_grad = true}), y = randn({6, 5}, {.dtype = dt});
    compiler::CaptureSession session({x, y});
    Tensor a = (x * y + 1.0).tanh();
    Tensor out = a.to(kFloat32).sigmoid() * 2.0 + a.to(kFloat32);
    compiler::Graph cpu = session.finish({out, a * 3.0});
    check_device_groups_on_host(cpu, {x, y}, 2e-2);
  }
  {  // bool operands: where's condition (a mask over the last dims) and a mask multiplied in
    Tensor x = randn({3, 4, 5}, {.requires_grad = true}), y = randn({3, 4, 5}, {.requires_grad = true});
    Tensor mask = randn({4, 5}) > 0.0, keep = randn({3, 4, 5}) > -0.5;
    compiler::CaptureSession session({x, y, mask, keep});
    Tensor out = (ember::where(mask, x * 2.0, y.tanh()) * keep).sigmoid();
    compiler::Graph cpu = session.finish({out});
    check_device_groups_on_host(cpu, {x, y, mask, keep}, 1e-5, "const bool* __restrict__ in");
  }
}

// ember.compile's CUDA kernels without a GPU: a graph captured on the CPU is retargeted to cuda:0
// (its values' devices rewritten, as a capture on a GPU would record them), fusion forms device
// groups with CUDA source (src/compile/codegen_device_source.cpp), and NVRTC compiles that source
// to a cubin for sm_90 (src/cuda/nvrtc_codegen.cpp). Running the kernels needs a GPU: the Python
// tests (test_compile.py, CUDA cases) do that where one is present.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "compile/fusion.h"
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

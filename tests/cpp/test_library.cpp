// C++ custom operators (include/ember/library.h): registration, device dispatch, autograd
// (gradcheck), shape inference, capture by compile as one node, and a saved program that runs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ember/autograd/autograd.h"
#include "gradcheck.h"
#include "ember/compile/capture.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/library.h"
#include "ember/profiler.h"

using namespace ember;
using ember::testing::gradcheck;

// y = scale * tanh(x) * w, scale an attr
EMBER_CUSTOM_OP(testlib, scaled_tanh_mul, "(Tensor x, Tensor w, float scale) -> Tensor") {
  op.kernel(DeviceType::CPU, [](const std::vector<Tensor>& in, const std::vector<double>& attrs) {
      return std::vector<Tensor>{in[0].tanh() * in[1] * attrs[0]};
    })
      .autograd([](const std::vector<Tensor>& g, const std::vector<Tensor>& in, const std::vector<Tensor>&,
                   const std::vector<double>& attrs) {
        Tensor t = in[0].tanh();
        return std::vector<Tensor>{g[0] * in[1] * attrs[0] * (1.0 - t * t), g[0] * t * attrs[0]};
      })
      .shape([](const std::vector<Tensor>& in, const std::vector<double>&) {
        return std::vector<Shape>{Shape(in[0].sizes().begin(), in[0].sizes().end())};
      });
}

EMBER_CUSTOM_OP(testlib, no_grad_formula, "(Tensor x) -> Tensor") {
  op.kernel(DeviceType::CPU, [](const std::vector<Tensor>& in, const std::vector<double>&) {
    return std::vector<Tensor>{in[0] * 2.0};
  });
}

TEST(Library, CallsDispatchesAndInfersShapes) {
  const auto& op = library::find("testlib::scaled_tanh_mul");
  EXPECT_EQ(op.schema(), "(Tensor x, Tensor w, float scale) -> Tensor");
  Tensor x = randn({3, 4}), w = randn({3, 4});
  EXPECT_TRUE(op({x, w}, {2.0})[0].allclose(x.tanh() * w * 2.0, 1e-6, 1e-6));
  EXPECT_EQ(op.infer_shape({x, w}, {2.0})[0], (Shape{3, 4}));
  EXPECT_TRUE(op.has_kernel(DeviceType::CPU));
  EXPECT_FALSE(op.has_kernel(DeviceType::CUDA));
  EXPECT_THROW(library::find("testlib::missing"), ValueError);
  EXPECT_THROW(library::define("no_namespace", "()"), ValueError);
  EXPECT_THROW(library::define("testlib::scaled_tanh_mul", "()"), Error);
  const auto names = library::registered();
  EXPECT_NE(std::find(names.begin(), names.end(), "testlib::no_grad_formula"), names.end());
}

TEST(Library, DifferentiatesThroughItsFormula) {
  const auto& op = library::find("testlib::scaled_tanh_mul");
  Tensor x = randn({5}, {.dtype = kFloat64}).requires_grad_(), w = randn({5}, {.dtype = kFloat64}).requires_grad_();
  auto fn = [&op](const autograd::variable_list& in) { return op(in, {1.5})[0]; };
  EXPECT_TRUE(gradcheck(fn, {x, w}));
  Tensor y = randn({3}).requires_grad_();
  Tensor out = library::find("testlib::no_grad_formula")({y})[0];
  EXPECT_THROW(out.sum().backward(), Error);  // names the op: no formula
}

TEST(Library, CapturedAsItsOwnNodeAndSavedInPrograms) {
  const auto& op = library::find("testlib::scaled_tanh_mul");
  NoGradGuard no_grad;
  Tensor x = randn({2, 3}), w = randn({2, 3});
  compiler::CaptureSession session({x, w});
  Tensor out = op({x, w}, {0.5})[0] + 1.0;
  exporting::Program program(session.finish({out}));
  bool found = false;
  for (const auto& n : program.graph().nodes) found = found || std::string(n.op) == "testlib::scaled_tanh_mul";
  EXPECT_TRUE(found);  // one node, not its tanh and muls
  const auto path = std::filesystem::temp_directory_path() / ("ember_custom_" + std::to_string(::getpid()) + ".ember");
  program.save(path.string());
  const auto loaded = exporting::load(path.string());
  std::filesystem::remove(path);
  Tensor x2 = randn({2, 3}), w2 = randn({2, 3});
  EXPECT_TRUE(loaded.run({x2, w2})[0].allclose(op({x2, w2}, {0.5})[0] + 1.0, 1e-6, 1e-6));
}

#pragma once
// Finite-difference gradient checks in float64, as torch.autograd.gradcheck / gradgradcheck.
//
//   EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].exp() * x[1]; }, {a, b}));
//
// Inputs must be float64 tensors that require grad (any layout: non-contiguous inputs are
// perturbed in place through their own strides). The function may return one tensor; its
// gradient is checked against central differences for a random grad_output.
#include <functional>
#include <sstream>

#include "test_utils.h"

namespace ember::testing {

using autograd::variable_list;
using GradFn = std::function<Tensor(const variable_list&)>;

namespace detail {
// Element `flat` (row-major logical index) of a tensor as a 0-dim view, whatever its strides
// and device: the perturbation is written with fill_, so it works on GPU memory too.
inline Tensor element(const Tensor& t, int64_t flat) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t s = t.sizes()[d];
    off += (flat % s) * t.strides()[d];
    flat /= s;
  }
  return t.as_strided({}, {}, t.storage_offset() + off);
}
inline double dot(const Tensor& a, const Tensor& b) {
  auto x = a.tolist<double>(), y = b.tolist<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}
}  // namespace detail

inline ::testing::AssertionResult gradcheck(const GradFn& fn, const variable_list& inputs, double eps = 1e-6,
                                            double atol = 1e-5, double rtol = 1e-3) {
  for (const auto& x : inputs)
    if (x.defined() && x.requires_grad() && x.dtype() != kFloat64)
      return ::testing::AssertionFailure() << "gradcheck needs float64 inputs";
  Tensor out = fn(inputs);
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  Generator g(7);  // drawn on the host (the same grad_output on every device), then moved
  Tensor v = randn(out.sizes(), {.dtype = out.dtype(), .device = Device(DeviceType::CPU)}, &g).to(out.device());
  variable_list diff;
  for (const auto& x : inputs) if (x.defined() && x.requires_grad()) diff.push_back(x);
  variable_list analytic = autograd::grad({out}, diff, {v}, true, false, true);
  NoGradGuard no_grad;
  for (size_t k = 0; k < diff.size(); ++k) {
    const Tensor& x = diff[k];
    for (int64_t j = 0; j < x.numel(); ++j) {
      Tensor e = detail::element(x, j);
      const double orig = e.item<double>();
      e.fill_(orig + eps);
      double plus = detail::dot(fn(inputs), v);
      e.fill_(orig - eps);
      double minus = detail::dot(fn(inputs), v);
      e.fill_(orig);
      double numeric = (plus - minus) / (2 * eps);
      double a = analytic[k].defined() ? analytic[k].tolist<double>()[j] : 0.0;
      if (std::abs(a - numeric) > atol + rtol * std::abs(numeric))
        return ::testing::AssertionFailure() << "input " << k << " element " << j << ": analytic " << a
                                             << " vs numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

// Checks the gradient of the gradient, as torch.autograd.gradgradcheck: the first-order
// gradients for a random grad_output (built with create_graph) are checked against finite
// differences with respect to the inputs and grad_output together. Making grad_output an input
// means ops that are linear in their inputs are checked too (their first-order gradient depends
// only on grad_output), and the backward of every formula involved runs.
inline ::testing::AssertionResult gradgradcheck(const GradFn& fn, const variable_list& inputs, double eps = 1e-6,
                                                double atol = 1e-5, double rtol = 1e-3) {
  try {
    Tensor probe = fn(inputs);
    Generator g(11);
    Tensor v = randn(probe.sizes(), {.dtype = probe.dtype(), .device = Device(DeviceType::CPU)}, &g)
                   .to(probe.device())
                   .requires_grad_();
    variable_list all = inputs;
    all.push_back(v);
    GradFn first_order = [fn](const variable_list& xs) {
      EnableGradGuard enable;  // gradcheck evaluates under no_grad; this graph must be recorded
      variable_list in(xs.begin(), xs.end() - 1), diff;
      for (const auto& x : in) if (x.defined() && x.requires_grad()) diff.push_back(x);
      variable_list gs = autograd::grad({fn(in)}, diff, {xs.back()}, true, true, true);
      variable_list flat;
      for (auto& gi : gs) if (gi.defined()) flat.push_back(gi.reshape({-1}));
      return cat(flat);
    };
    return gradcheck(first_order, all, eps, atol, rtol);
  } catch (const NotImplementedError&) {
    throw;  // an op with no kernel on this device: run_device_case reports it (skipped on CUDA)
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw: " << e.what();
  }
}

// A float64 input that requires grad, from make_input's layouts.
inline Tensor grad_input(Layout layout, double lo = -2.0, double hi = 2.0, uint64_t seed = 0) {
  Tensor t = make_input(kFloat64, layout, lo, hi, seed);
  t = t.detach();
  t.requires_grad_(true);
  return t;
}

}  // namespace ember::testing

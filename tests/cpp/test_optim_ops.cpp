// The optimizers' multi-tensor update ops (_fused_adam_, _fused_adamw_, _fused_sgd_,
// _fused_adagrad_, _fused_rmsprop_): values against float64 references of torch's formulas over
// every layout (contiguous, transposed, strided, 0-dim, empty) and per-parameter step counts;
// the checks' messages; the optimizers reaching them through the dispatcher, on a new device
// by registration alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim.h"
#include "ember/optim/fused.h"
#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

using Vec = std::vector<double>;

// One list argument: a tensor per parameter, parameter i in layout i (the first three layouts
// rotate per list, so a state tensor's strides differ from its parameter's).
std::vector<Tensor> make_list(DType dt, int list, double lo, double hi) {
  const std::vector<Layout> ls = all_layouts();
  std::vector<Tensor> out;
  for (size_t i = 0; i < ls.size(); ++i) {
    Layout l = i < 3 ? ls[(i + size_t(list)) % 3] : ls[i];
    out.push_back(make_input(dt, l, lo, hi, uint64_t(100 * list + i)));
  }
  return out;
}

std::vector<Vec> values(const std::vector<Tensor>& ts) {
  std::vector<Vec> out;
  for (const Tensor& t : ts) out.push_back(t.tolist<double>());
  return out;
}

void expect_values(const std::vector<Tensor>& got, const std::vector<Vec>& want, DType dt, const char* what) {
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(close_to(got[i], Ref{got[i].sizes(), want[i]}, dt)) << what << "[" << i << "]";
}

// Step counts differ per parameter, so a kernel that reads one for all fails.
std::vector<Tensor> make_steps(size_t n) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) out.push_back(scalar_tensor(double(1 + 3 * i), {.dtype = DType::Float32}));
  return out;
}

const DType kDtypes[] = {DType::Float32, DType::Float64};

}  // namespace

EMBER_DEVICE_TEST(OptimOps, AdamAndAdamWMatchReference) {
  struct Opt {
    bool amsgrad, maximize;
    double wd;
  };
  for (DType dt : kDtypes)
    for (bool decoupled : {false, true})
      for (Opt o : {Opt{false, false, 0}, Opt{true, false, 0.1}, Opt{false, true, 0.1}, Opt{true, true, 0}}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + (decoupled ? " adamw" : " adam") + " amsgrad=" +
                     std::to_string(o.amsgrad) + " maximize=" + std::to_string(o.maximize) +
                     " wd=" + std::to_string(o.wd));
        const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-6;
        auto p = make_list(dt, 0, -2, 2), g = make_list(dt, 1, -1, 1), m = make_list(dt, 2, -0.5, 0.5);
        auto v = make_list(dt, 3, 0, 0.5), vmax = make_list(dt, 4, 0, 0.5), steps = make_steps(p.size());
        auto P = values(p), G = values(g), M = values(m), V = values(v), VM = values(vmax);
        for (size_t t = 0; t < P.size(); ++t) {
          const double step = 1 + 3 * double(t);
          const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
          for (size_t i = 0; i < P[t].size(); ++i) {
            double gi = o.maximize ? -G[t][i] : G[t][i];
            double& pi = P[t][i];
            if (decoupled) pi *= 1 - lr * o.wd;
            else gi += o.wd * pi;
            M[t][i] = b1 * M[t][i] + (1 - b1) * gi;
            V[t][i] = b2 * V[t][i] + (1 - b2) * gi * gi;
            double src = V[t][i];
            if (o.amsgrad) src = VM[t][i] = std::max(VM[t][i], V[t][i]);
            pi -= lr / bc1 * M[t][i] / (std::sqrt(src) / std::sqrt(bc2) + eps);
          }
        }
        std::vector<Tensor> no_vmax;
        auto* op = decoupled ? &_fused_adamw_ : &_fused_adam_;
        op(p, g, m, v, o.amsgrad ? vmax : no_vmax, steps, lr, b1, b2, o.wd, eps, o.amsgrad, o.maximize);
        expect_values(p, P, dt, "params");
        expect_values(m, M, dt, "exp_avgs");
        expect_values(v, V, dt, "exp_avg_sqs");
        expect_values(vmax, VM, dt, "max_exp_avg_sqs");
        EXPECT_FALSE(p[1].is_contiguous());  // written back in place, strides kept
      }
}

EMBER_DEVICE_TEST(OptimOps, SgdMatchesReference) {
  struct Opt {
    double momentum, dampening, wd;
    bool nesterov, maximize, first;
  };
  for (DType dt : kDtypes)
    for (Opt o : {Opt{0, 0, 0, false, false, false}, Opt{0, 0, 0.1, false, true, false},
                  Opt{0.9, 0.1, 0.1, false, false, false}, Opt{0.9, 0.1, 0, false, false, true},
                  Opt{0.9, 0, 0.1, true, true, false}, Opt{0.9, 0, 0, true, false, true}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " momentum=" + std::to_string(o.momentum) + " nesterov=" +
                   std::to_string(o.nesterov) + " first=" + std::to_string(o.first));
      const double lr = 0.1;
      auto p = make_list(dt, 0, -2, 2), g = make_list(dt, 1, -1, 1), buf = make_list(dt, 2, -1, 1);
      auto P = values(p), G = values(g), B = values(buf);
      for (size_t t = 0; t < P.size(); ++t)
        for (size_t i = 0; i < P[t].size(); ++i) {
          double d = o.maximize ? -G[t][i] : G[t][i];
          d += o.wd * P[t][i];
          if (o.momentum != 0) {
            B[t][i] = o.first ? d : o.momentum * B[t][i] + (1 - o.dampening) * d;
            d = o.nesterov ? d + o.momentum * B[t][i] : B[t][i];
          }
          P[t][i] -= lr * d;
        }
      std::vector<Tensor> no_buf;
      _fused_sgd_(p, g, o.momentum != 0 ? buf : no_buf, o.wd, o.momentum, lr, o.dampening, o.nesterov, o.maximize,
                  o.first);
      expect_values(p, P, dt, "params");
      expect_values(buf, B, dt, "momentum_buffer_list");
    }
}

EMBER_DEVICE_TEST(OptimOps, AdagradMatchesReference) {
  for (DType dt : kDtypes)
    for (double wd : {0.0, 0.1})
      for (bool maximize : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " wd=" + std::to_string(wd) +
                     " maximize=" + std::to_string(maximize));
        const double lr = 0.1, lr_decay = 0.05, eps = 1e-10;
        auto p = make_list(dt, 0, -2, 2), g = make_list(dt, 1, -1, 1), sum = make_list(dt, 2, 0, 1);
        auto steps = make_steps(p.size());
        auto P = values(p), G = values(g), S = values(sum);
        for (size_t t = 0; t < P.size(); ++t) {
          const double clr = lr / (1 + (double(3 * t)) * lr_decay);  // step 1 + 3t
          for (size_t i = 0; i < P[t].size(); ++i) {
            double gi = (maximize ? -G[t][i] : G[t][i]) + wd * P[t][i];
            S[t][i] += gi * gi;
            P[t][i] -= clr * gi / (std::sqrt(S[t][i]) + eps);
          }
        }
        _fused_adagrad_(p, g, sum, steps, lr, lr_decay, wd, eps, maximize);
        expect_values(p, P, dt, "params");
        expect_values(sum, S, dt, "state_sums");
      }
}

EMBER_DEVICE_TEST(OptimOps, RmspropMatchesReference) {
  struct Opt {
    double momentum, wd;
    bool centered, maximize;
  };
  for (DType dt : kDtypes)
    for (Opt o : {Opt{0, 0, false, false}, Opt{0.9, 0.1, false, true}, Opt{0, 0.1, true, false},
                  Opt{0.5, 0, true, true}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " momentum=" + std::to_string(o.momentum) + " centered=" +
                   std::to_string(o.centered));
      const double lr = 0.01, alpha = 0.9, eps = 1e-8;
      auto p = make_list(dt, 0, -2, 2), g = make_list(dt, 1, -1, 1), sq = make_list(dt, 2, 0.5, 1);
      auto buf = make_list(dt, 3, -1, 1), gavg = make_list(dt, 4, -0.2, 0.2);
      auto P = values(p), G = values(g), SQ = values(sq), B = values(buf), GA = values(gavg);
      for (size_t t = 0; t < P.size(); ++t)
        for (size_t i = 0; i < P[t].size(); ++i) {
          double gi = (o.maximize ? -G[t][i] : G[t][i]) + o.wd * P[t][i];
          SQ[t][i] = alpha * SQ[t][i] + (1 - alpha) * gi * gi;
          double avg;
          if (o.centered) {
            GA[t][i] = alpha * GA[t][i] + (1 - alpha) * gi;
            avg = std::sqrt(SQ[t][i] - GA[t][i] * GA[t][i]);
          } else {
            avg = std::sqrt(SQ[t][i]);
          }
          avg += eps;
          if (o.momentum > 0) {
            B[t][i] = o.momentum * B[t][i] + gi / avg;
            P[t][i] -= lr * B[t][i];
          } else {
            P[t][i] -= lr * gi / avg;
          }
        }
      std::vector<Tensor> none;
      _fused_rmsprop_(p, g, sq, o.momentum > 0 ? buf : none, o.centered ? gavg : none, lr, alpha, eps, o.wd,
                      o.momentum, o.centered, o.maximize);
      expect_values(p, P, dt, "params");
      expect_values(sq, SQ, dt, "square_avgs");
      expect_values(buf, B, dt, "momentum_buffer_list");
      expect_values(gavg, GA, dt, "grad_avgs");
    }
}

// An empty call is a no-op (an optimizer whose parameters have no gradients makes none, but a
// user may).
EMBER_DEVICE_TEST(OptimOps, EmptyListsAreANoOp) {
  std::vector<Tensor> none;
  _fused_adam_(none, none, none, none, none, none, 0.1, 0.9, 0.99, 0, 1e-8, false, false);
  _fused_sgd_(none, none, none, 0, 0.9, 0.1, 0, false, false, true);
}

// ---------------------------------------------------------------- checks
namespace {
// Another device for the mixed-device checks: the harness's test device (device_test.h).
const Device kFake = test_device(0);
}  // namespace

TEST(OptimOps, ListLengthsMustMatch) {
  std::vector<Tensor> two = {zeros({2}), zeros({3})}, one = {zeros({2})}, none;
  std::vector<Tensor> steps = {scalar_tensor(1, {.dtype = kFloat32}), scalar_tensor(1, {.dtype = kFloat32})};
  EXPECT_THROW_MSG(_fused_adam_(two, one, two, two, none, steps, 0.1, 0.9, 0.99, 0, 1e-8, false, false), Error,
                   "_fused_adam_: expected grads to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_adamw_(two, two, two, one, none, steps, 0.1, 0.9, 0.99, 0, 1e-8, false, false), Error,
                   "_fused_adamw_: expected exp_avg_sqs to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_adam_(two, two, two, two, one, steps, 0.1, 0.9, 0.99, 0, 1e-8, true, false), Error,
                   "_fused_adam_: expected max_exp_avg_sqs to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_adam_(two, two, two, two, two, steps, 0.1, 0.9, 0.99, 0, 1e-8, false, false), Error,
                   "_fused_adam_: expected max_exp_avg_sqs to be empty with amsgrad=False, got 2 tensors");
  EXPECT_THROW_MSG(_fused_adam_(two, two, two, two, none, one, 0.1, 0.9, 0.99, 0, 1e-8, false, false), Error,
                   "_fused_adam_: expected state_steps to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_sgd_(two, two, none, 0, 0.9, 0.1, 0, false, false, false), Error,
                   "_fused_sgd_: expected momentum_buffer_list to hold one tensor per param (2), got 0");
  EXPECT_THROW_MSG(_fused_sgd_(two, two, two, 0, 0, 0.1, 0, false, false, false), Error,
                   "_fused_sgd_: expected momentum_buffer_list to be empty with momentum=0, got 2 tensors");
  EXPECT_THROW_MSG(_fused_adagrad_(two, two, one, steps, 0.1, 0, 0, 1e-10, false), Error,
                   "_fused_adagrad_: expected state_sums to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_rmsprop_(two, two, two, none, one, 0.1, 0.99, 1e-8, 0, 0, true, false), Error,
                   "_fused_rmsprop_: expected grad_avgs to hold one tensor per param (2), got 1");
  EXPECT_THROW_MSG(_fused_rmsprop_(two, two, two, two, none, 0.1, 0.99, 1e-8, 0, 0, false, false), Error,
                   "_fused_rmsprop_: expected momentum_buffer_list to be empty with momentum=0, got 2 tensors");
}

TEST(OptimOps, TensorsMustMatchTheirParam) {
  Tensor p = zeros({2, 3}), fake = zeros({2, 3}, {.device = kFake});
  std::vector<Tensor> ps = {zeros({4}), p}, none;
  std::vector<Tensor> steps = {scalar_tensor(1, {.dtype = kFloat32}), scalar_tensor(1, {.dtype = kFloat32})};
  auto adam = [&](std::vector<Tensor> grads, std::vector<Tensor> m, std::vector<Tensor> st) {
    _fused_adam_(ps, grads, m, {zeros({4}), zeros({2, 3})}, none, st, 0.1, 0.9, 0.99, 0, 1e-8, false, false);
  };
  EXPECT_THROW_MSG(adam({zeros({4}), zeros({2, 3}, {.dtype = kFloat64})}, ps, steps), Error,
                   "_fused_adam_: expected grads[1] of dtype float32 (the dtype of params[1]), got float64");
  EXPECT_THROW_MSG(adam({zeros({4}), fake}, ps, steps), Error,
                   "_fused_adam_: expected grads[1] on cpu (the device of params[1]), got testdevice:0");
  EXPECT_THROW_MSG(adam(ps, {zeros({4}), zeros({6})}, steps), Error,
                   "_fused_adam_: expected exp_avgs[1] of shape [2, 3] (the shape of params[1]), got [6]");
  EXPECT_THROW_MSG(adam(ps, {zeros({4}), Tensor()}, steps), Error,
                   "_fused_adam_: expected exp_avgs[1] to be a tensor, got an undefined one");
  EXPECT_THROW_MSG(adam(ps, ps, {steps[0], scalar_tensor(1, {.dtype = kFloat64})}), Error,
                   "_fused_adam_: expected state_steps[1] to be a one-element float32 tensor, got float64 of "
                   "shape []");
  EXPECT_THROW_MSG(adam(ps, ps, {steps[0], zeros({2})}), Error,
                   "_fused_adam_: expected state_steps[1] to be a one-element float32 tensor, got float32 of "
                   "shape [2]");
  EXPECT_THROW_MSG(adam(ps, ps, {steps[0], scalar_tensor(1, {.dtype = kFloat32, .device = kFake})}), Error,
                   "_fused_adam_: expected state_steps[1] on cpu (the device of params[1]), got testdevice:0");
  std::vector<Tensor> mixed = {p, fake};
  EXPECT_THROW_MSG(_fused_sgd_(mixed, mixed, none, 0, 0, 0.1, 0, false, false, false), Error,
                   "_fused_sgd_: expected all params on one device, got cpu (params[0]) and testdevice:0 "
                   "(params[1])");
}

// A dtype the CPU kernels lack fails before any parameter is touched.
TEST(OptimOps, UnsupportedDtypeFailsBeforeUpdating) {
  Tensor a = ones({3}), h = ones({3}, {.dtype = kInt32});
  std::vector<Tensor> ps = {a, h}, none;
  EXPECT_THROW_MSG(_fused_sgd_(ps, ps, none, 0, 0, 0.1, 0, false, false, false), Error,
                   "\"_fused_sgd_\" not implemented for 'Int'");
  EXPECT_EQ(a.tolist<double>(), Vec(3, 1.0));
}

// float16/bfloat16 parameters update in float32 and are rounded once (torch's opmath): the
// result equals the float32 update of the same values, rounded to the parameter's dtype.
TEST(OptimOps, ReducedFloatParamsUpdateInFloat32) {
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor p = tensor({0.5, -1.25, 3.0}).to(dt), g = tensor({0.1, 0.2, -0.3}).to(dt);
    Tensor m = zeros({3}, {.dtype = dt}), v = zeros({3}, {.dtype = dt}), step = full({1}, 1.0), step_h = step.clone();
    Tensor p32 = p.to(kFloat32), g32 = g.to(kFloat32), m32 = m.to(kFloat32), v32 = v.to(kFloat32);
    std::vector<Tensor> a = {p32}, b = {g32}, c = {m32}, d = {v32}, e = {step}, none;
    _fused_adamw_(a, b, c, d, none, e, 0.1, 0.9, 0.999, 0.01, 1e-8, false, false);
    std::vector<Tensor> ah = {p}, bh = {g}, ch = {m}, dh = {v}, eh = {step_h};
    _fused_adamw_(ah, bh, ch, dh, none, eh, 0.1, 0.9, 0.999, 0.01, 1e-8, false, false);
    EXPECT_EQ(p.dtype(), dt);
    EXPECT_EQ(p.to(kFloat32).tolist<float>(), p32.to(dt).to(kFloat32).tolist<float>()) << dtype_name(dt);
    EXPECT_EQ(m.to(kFloat32).tolist<float>(), m32.to(dt).to(kFloat32).tolist<float>()) << dtype_name(dt);
  }
}

// ---------------------------------------------------------------- through the optimizers
namespace {
std::vector<std::string> observed_ops(optim::Optimizer& opt) {
  std::vector<std::string> seen;
  int id = add_op_observer({.on_begin = [&](const char* n) { seen.emplace_back(n); }, .on_end = nullptr});
  opt.step();
  remove_op_observer(id);
  return seen;
}
std::vector<Tensor> params_with_grads() {
  std::vector<Tensor> ps = {randn({4, 3}).requires_grad_(), randn({3}).requires_grad_(), randn({2}).requires_grad_()};
  for (auto& p : ps) p.set_grad(randn(p.sizes()));
  return ps;
}
}  // namespace

TEST(OptimOps, OptimizerStepIsOneDispatchedOp) {
  auto check = [](optim::Optimizer&& opt, const char* op) {
    SCOPED_TRACE(op);
    for (int s = 0; s < 2; ++s) {  // the first step creates state, the second only updates
      auto seen = observed_ops(opt);
      EXPECT_EQ(std::count(seen.begin(), seen.end(), op), 1);
    }
  };
  check(optim::Adam(params_with_grads(), {.lr = 0.1, .amsgrad = true}), "_fused_adam_");
  check(optim::AdamW(params_with_grads()), "_fused_adamw_");
  check(optim::SGD(params_with_grads(), {.lr = 0.1}), "_fused_sgd_");
  check(optim::Adagrad(params_with_grads()), "_fused_adagrad_");
  check(optim::RMSprop(params_with_grads(), {.momentum = 0.9, .centered = true}), "_fused_rmsprop_");
}

// SGD starts a momentum buffer from the parameter's own gradient the first time it has one,
// even when the other parameters' buffers exist already: two calls, one per kind.
EMBER_DEVICE_TEST(OptimOps, SgdFirstStepIsPerParameter) {
  auto ps = params_with_grads();
  Tensor late = ps[2];
  late.set_grad(Tensor());
  optim::SGD sgd(ps, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  sgd.step();
  late.set_grad(ones({2}));
  auto seen = observed_ops(sgd);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "_fused_sgd_"), 2);
  // This step's d_p, not 0.9 * 0 + (1 - 0.5) * 1 from a zero buffer.
  Tensor buf = sgd.state_for(late).at("momentum_buffer").to_tensor();
  EXPECT_EQ(buf.tolist<double>(), Vec(2, 1.0));
}

// A "step" loaded as a number or as float64 becomes the float32 tensor the ops take; the update
// is the one the tensor step gives.
EMBER_DEVICE_TEST(OptimOps, AdamStepLoadedAsNumberIsConverted) {
  auto run = [](Value step) {
    Tensor p = tensor({1.0, -2.0}).requires_grad_();
    p.set_grad(tensor({0.5, 0.25}));
    optim::Adam adam({p}, {.lr = 0.1});
    Value& st = adam.state_for(p);
    st["step"] = step;
    st["exp_avg"] = tensor({0.1, 0.2});
    st["exp_avg_sq"] = tensor({0.3, 0.4});
    adam.step();
    const Tensor& s = st.at("step").to_tensor();
    EXPECT_EQ(s.dtype(), kFloat32);
    EXPECT_EQ(s.item<double>(), 4.0);
    return p.tolist<double>();
  };
  Vec want = run(Value(scalar_tensor(3, {.dtype = kFloat32})));
  EXPECT_EQ(run(Value(int64_t(3))), want);
  EXPECT_EQ(run(Value(3.0)), want);
  EXPECT_EQ(run(Value(scalar_tensor(3, {.dtype = kFloat64}))), want);
}

// A device is added to the optimizers by registering its kernels: SGD on every device runs that
// device's _fused_sgd_ (on the test device, its kernel over the same bytes), its momentum
// buffers live there, and no CPU loop sees the tensors.
EMBER_DEVICE_TEST(OptimOps, OptimizerRunsOnEveryDevice) {
  Tensor p = tensor({1.0, 2.0, 3.0}).requires_grad_();
  p.set_grad(tensor({0.5, -1.0, 2.0}));
  optim::SGD sgd({p}, {.lr = 0.1, .momentum = 0.9});
  int calls = 0;
  int id = add_op_observer({.on_begin = [&](const char* n) { calls += std::string(n) == "_fused_sgd_"; }, .on_end = nullptr});
  sgd.step();
  sgd.step();
  remove_op_observer(id);
  EXPECT_EQ(calls, 2);
  const Tensor& buf = sgd.state_for(p).at("momentum_buffer").to_tensor();
  EXPECT_EQ(buf.device(), device());
  EXPECT_EQ(p.device(), device());
  // buf: g, then 0.9 g + g; p: p - 0.1 g - 0.1 * 1.9 g.
  Vec want = {1.0 - 0.29 * 0.5, 2.0 + 0.29 * 1.0, 3.0 - 0.29 * 2.0};
  EXPECT_TRUE(close_to(p.detach(), Ref{{3}, want}, kFloat32));
}

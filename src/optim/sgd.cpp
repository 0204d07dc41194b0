// SGD: torch 1.13's _single_tensor_sgd fused into one elementwise pass per parameter.
#include "ember/optim/sgd.h"

#include "core/parallel.h"
#include "cpu/dtype_dispatch.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::optim {
namespace {

using detail::num0;
using detail::py_num;

Value sgd_defaults(const SGDOptions& o) {
  if (o.lr) EMBER_CHECK_VALUE(0.0 <= *o.lr, "Invalid learning rate: ", py_num(*o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.momentum, "Invalid momentum value: ", py_num(o.momentum));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                    "Nesterov momentum requires a momentum and zero dampening");
  return Value::dict({{"lr", o.lr ? Value(*o.lr) : Value("<required parameter>")},
                      {"momentum", num0(o.momentum)}, {"dampening", num0(o.dampening)},
                      {"weight_decay", num0(o.weight_decay)}, {"nesterov", o.nesterov},
                      {"maximize", o.maximize}, {"foreach", nullptr}, {"differentiable", false}});
}

struct SGDStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

// buf == nullptr: no momentum. first: the buffer is created from this step's d_p.
template <class T> void sgd_kernel(int64_t n, T* p, const T* g, T* buf, bool first, const SGDStep& s) {
  const T wd = T(s.weight_decay), mom = T(s.momentum), one_m_damp = T(1 - s.dampening), neg_lr = T(-s.lr);
  const bool has_wd = s.weight_decay != 0, nesterov = s.nesterov, maximize = s.maximize;
  parallel_for(0, n, kGrainSize / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T d = maximize ? -g[i] : g[i];
      if (has_wd) d = d + wd * p[i];
      if (buf) {
        T bi = first ? d : buf[i] * mom + one_m_damp * d;
        buf[i] = bi;
        d = nesterov ? d + mom * bi : bi;
      }
      p[i] = p[i] + neg_lr * d;
    }
  });
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(sgd_defaults(options)) {
  init_groups(std::move(groups));
}

void SGD::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    SGDStep s{o.at("lr").to_double(), o.at("momentum").to_double(), o.at("dampening").to_double(),
              o.at("weight_decay").to_double(), o.at("nesterov").to_bool(), o.at("maximize").to_bool()};
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      bool first = !st.contains("momentum_buffer") || st.at("momentum_buffer").is_none();
      Tensor* buf = nullptr;
      if (s.momentum != 0) {
        if (first) st["momentum_buffer"] = zeros(param.sizes(), param.options());
        buf = &st["momentum_buffer"].to_tensor();
        EMBER_CHECK(buf->is_contiguous(), "SGD: momentum_buffer must be contiguous");
      } else if (first) {
        st["momentum_buffer"] = nullptr;
      }
      detail::with_contiguous(param, [&](Tensor& p, const Tensor& g) {
        cpu::visit_dtype<cpu::kFloatTypes>(p.dtype(), "SGD", [&]<class T>() {
          sgd_kernel<T>(p.numel(), p.data_ptr<T>(), g.data_ptr<T>(), buf ? buf->data_ptr<T>() : nullptr, first, s);
        });
      });
    }
  }
}

}  // namespace ember::optim

// Learning-rate schedulers: a line-by-line port of torch/optim/lr_scheduler.py (PyTorch 1.13),
// keeping its arithmetic order so the sequences match to the last bit where possible.
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/core/errors.h"

namespace ember::optim {

namespace {
constexpr double kPi = 3.141592653589793;

Value dlist(const std::vector<double>& v) {
  ValueList items;
  for (double x : v) items.emplace_back(x);
  return Value::list(std::move(items));
}
Value ilist(const std::vector<int64_t>& v) {
  ValueList items;
  for (int64_t x : v) items.emplace_back(x);
  return Value::list(std::move(items));
}
std::vector<double> to_dvec(const Value& v) {
  std::vector<double> out;
  for (const Value& x : v.items_list()) out.push_back(x.to_double());
  return out;
}
std::vector<int64_t> to_ivec(const Value& v) {
  std::vector<int64_t> out;
  for (const Value& x : v.items_list()) out.push_back(x.to_int());
  return out;
}
int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
}  // namespace

// ---------------------------------------------------------------- base

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch) : optimizer_(&optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer.param_groups;
  if (last_epoch == -1) {
    for (auto& g : groups)
      if (!g.options.contains("initial_lr")) g.options["initial_lr"] = g.lr();
  } else {
    for (size_t i = 0; i < groups.size(); ++i)
      EMBER_CHECK(groups[i].options.contains("initial_lr"), "param 'initial_lr' is not specified in param_groups[",
                  i, "] when resuming an optimizer");
  }
  for (auto& g : groups) base_lrs_.push_back(g.options.at("initial_lr").to_double());
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (auto& g : optimizer_->param_groups) out.push_back(g.lr());
  return out;
}

void LRScheduler::apply_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_->param_groups;
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step(std::optional<int64_t> epoch) {
  ++step_count_;
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    values = closed ? *closed : get_lr();
  }
  apply_lrs(values);
}

Value LRScheduler::state_dict() const {
  Value d = Value::dict();
  d["base_lrs"] = dlist(base_lrs_);
  d["last_epoch"] = last_epoch_;
  d["_step_count"] = step_count_;
  d["_last_lr"] = dlist(last_lr_);
  save_extra(d);
  return d;
}

void LRScheduler::load_state_dict(const Value& state) {
  EMBER_CHECK(state.is_dict(), "load_state_dict: expected a dict, got ", value_kind_name(state.kind()));
  if (state.contains("base_lrs")) base_lrs_ = to_dvec(state.at("base_lrs"));
  if (state.contains("last_epoch")) last_epoch_ = state.at("last_epoch").to_int();
  if (state.contains("_step_count")) step_count_ = state.at("_step_count").to_int();
  if (state.contains("_last_lr")) last_lr_ = to_dvec(state.at("_last_lr"));
  load_extra(state);
}

// ---------------------------------------------------------------- StepLR

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}
std::vector<double> StepLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0 || py_mod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}
std::optional<std::vector<double>> StepLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(py_floordiv(last_epoch_, step_size_))));
  return out;
}
void StepLR::save_extra(Value& d) const { d["step_size"] = step_size_; d["gamma"] = gamma_; }
void StepLR::load_extra(const Value& d) {
  if (d.contains("step_size")) step_size_ = d.at("step_size").to_int();
  if (d.contains("gamma")) gamma_ = d.at("gamma").to_double();
}

// ---------------------------------------------------------------- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}
std::vector<double> MultiStepLR::get_lr() {
  auto lrs = group_lrs();
  auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, double(count));
  return lrs;
}
std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  auto n = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(n)));
  return out;
}
void MultiStepLR::save_extra(Value& d) const { d["milestones"] = ilist(milestones_); d["gamma"] = gamma_; }
void MultiStepLR::load_extra(const Value& d) {
  if (d.contains("milestones")) milestones_ = to_ivec(d.at("milestones"));
  std::sort(milestones_.begin(), milestones_.end());
  if (d.contains("gamma")) gamma_ = d.at("gamma").to_double();
}

// ---------------------------------------------------------------- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), gamma_(gamma) {
  initial_step();
}
std::vector<double> ExponentialLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}
std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_)));
  return out;
}
void ExponentialLR::save_extra(Value& d) const { d["gamma"] = gamma_; }
void ExponentialLR::load_extra(const Value& d) {
  if (d.contains("gamma")) gamma_ = d.at("gamma").to_double();
}

// ---------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK_VALUE(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}
std::vector<double> CosineAnnealingLR::get_lr() {
  auto lrs = group_lrs();
  const double T = double(T_max_), e = double(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
    return lrs;
  }
  if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}
std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * double(last_epoch_) / double(T_max_))) / 2);
  return out;
}
void CosineAnnealingLR::save_extra(Value& d) const { d["T_max"] = T_max_; d["eta_min"] = eta_min_; }
void CosineAnnealingLR::load_extra(const Value& d) {
  if (d.contains("T_max")) T_max_ = d.at("T_max").to_int();
  if (d.contains("eta_min")) eta_min_ = d.at("eta_min").to_double();
}

// ---------------------------------------------------------------- CosineAnnealingWarmRestarts

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt, int64_t T_0, int64_t T_mult, double eta_min,
                                                         int64_t last_epoch)
    : LRScheduler(opt, last_epoch), T_0_(T_0), T_i_(T_0), T_mult_(T_mult), eta_min_(eta_min),
      T_cur_(double(last_epoch)) {
  EMBER_CHECK_VALUE(T_0 > 0, "Expected positive integer T_0, but got ", T_0);
  EMBER_CHECK_VALUE(T_mult >= 1, "Expected integer T_mult >= 1, but got ", T_mult);
  initial_step();
}
std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * T_cur_ / double(T_i_))) / 2);
  return out;
}
void CosineAnnealingWarmRestarts::step(std::optional<int64_t> epoch_arg) {
  std::optional<int64_t> epoch = epoch_arg;
  if (!epoch && last_epoch_ < 0) epoch = 0;
  if (!epoch) {
    epoch = last_epoch_ + 1;
    T_cur_ = T_cur_ + 1;
    if (T_cur_ >= double(T_i_)) {
      T_cur_ = T_cur_ - double(T_i_);
      T_i_ = T_i_ * T_mult_;
    }
  } else {
    const int64_t e = *epoch;
    EMBER_CHECK_VALUE(e >= 0, "Expected non-negative epoch, but got ", e);
    if (e >= T_0_) {
      if (T_mult_ == 1) {
        T_cur_ = double(e % T_0_);
      } else {
        auto n = int64_t(std::log(double(e) / double(T_0_) * double(T_mult_ - 1) + 1) / std::log(double(T_mult_)));
        double tm_n = std::pow(double(T_mult_), double(n));
        T_cur_ = double(e) - double(T_0_) * (tm_n - 1) / double(T_mult_ - 1);
        T_i_ = T_0_ * int64_t(tm_n);
      }
    } else {
      T_i_ = T_0_;
      T_cur_ = double(e);
    }
  }
  last_epoch_ = *epoch;
  ++step_count_;
  apply_lrs(get_lr());
}
void CosineAnnealingWarmRestarts::save_extra(Value& d) const {
  d["T_0"] = T_0_;
  d["T_i"] = T_i_;
  d["T_mult"] = T_mult_;
  d["eta_min"] = eta_min_;
  d["T_cur"] = T_cur_;
}
void CosineAnnealingWarmRestarts::load_extra(const Value& d) {
  if (d.contains("T_0")) T_0_ = d.at("T_0").to_int();
  if (d.contains("T_i")) T_i_ = d.at("T_i").to_int();
  if (d.contains("T_mult")) T_mult_ = d.at("T_mult").to_int();
  if (d.contains("eta_min")) eta_min_ = d.at("eta_min").to_double();
  if (d.contains("T_cur")) T_cur_ = d.at("T_cur").to_double();
}

// ---------------------------------------------------------------- LinearLR

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  EMBER_CHECK_VALUE(start_factor <= 1.0 && start_factor >= 0,
                    "Starting multiplicative factor expected to be between 0 and 1.");
  EMBER_CHECK_VALUE(end_factor <= 1.0 && end_factor >= 0, "Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}
std::vector<double> LinearLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  for (double& lr : lrs)
    lr = lr * (1. + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d));
  return lrs;
}
std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * double(std::min(total_iters_, last_epoch_)) /
                                           double(total_iters_)));
  return out;
}
void LinearLR::save_extra(Value& d) const {
  d["start_factor"] = start_factor_;
  d["end_factor"] = end_factor_;
  d["total_iters"] = total_iters_;
}
void LinearLR::load_extra(const Value& d) {
  if (d.contains("start_factor")) start_factor_ = d.at("start_factor").to_double();
  if (d.contains("end_factor")) end_factor_ = d.at("end_factor").to_double();
  if (d.contains("total_iters")) total_iters_ = d.at("total_iters").to_int();
}

// ---------------------------------------------------------------- ConstantLR

ConstantLR::ConstantLR(Optimizer& opt, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK_VALUE(factor <= 1.0 && factor >= 0, "Constant multiplicative factor expected to be between 0 and 1.");
  initial_step();
}
std::vector<double> ConstantLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
    return lrs;
  }
  if (last_epoch_ != total_iters_) return lrs;
  for (double& lr : lrs) lr = lr * (1.0 / factor_);
  return lrs;
}
std::optional<std::vector<double>> ConstantLR::closed_form_lr() {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * (factor_ + double(last_epoch_ >= total_iters_) * (1 - factor_)));
  return out;
}
void ConstantLR::save_extra(Value& d) const { d["factor"] = factor_; d["total_iters"] = total_iters_; }
void ConstantLR::load_extra(const Value& d) {
  if (d.contains("factor")) factor_ = d.at("factor").to_double();
  if (d.contains("total_iters")) total_iters_ = d.at("total_iters").to_int();
}

// ---------------------------------------------------------------- LambdaLR

LambdaLR::LambdaLR(Optimizer& opt, Lambda lr_lambda, int64_t last_epoch)
    : LambdaLR(opt, std::vector<Lambda>(opt.param_groups.size(), lr_lambda), last_epoch) {}
LambdaLR::LambdaLR(Optimizer& opt, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK_VALUE(lambdas_.size() == opt.param_groups.size(), "Expected ", opt.param_groups.size(),
                    " lr_lambdas, but got ", lambdas_.size());
  initial_step();
}
std::vector<double> LambdaLR::get_lr() {
  std::vector<double> out;
  for (size_t i = 0; i < base_lrs_.size(); ++i) out.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return out;
}
void LambdaLR::save_extra(Value& d) const {
  // Functions are not state: torch stores None for plain functions.
  d["lr_lambdas"] = Value::list(ValueList(lambdas_.size()));
}

// ---------------------------------------------------------------- SequentialLR

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(opt, -1), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK_VALUE(!schedulers_.empty(), "SequentialLR: expected at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i)
    EMBER_CHECK_VALUE(schedulers_[i] && schedulers_[i]->optimizer_ == &opt,
                      "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
                      "schedulers at index ",
                      i, " to be different than the optimizer passed in.");
  EMBER_CHECK_VALUE(milestones_.size() == schedulers_.size() - 1,
                    "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                    "of milestone points, but got number of schedulers ",
                    schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  for (auto& g : opt.param_groups) g.set_lr(g.options.at("initial_lr").to_double());
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}
void SequentialLR::step(std::optional<int64_t>) {
  ++last_epoch_;
  size_t idx = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  auto& s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s->step(0);
  else
    s->step();
  last_lr_ = s->get_last_lr();
}
Value SequentialLR::state_dict() const {
  Value d = Value::dict();
  d["_milestones"] = ilist(milestones_);
  d["last_epoch"] = last_epoch_;
  d["_last_lr"] = dlist(last_lr_);
  ValueList subs;
  for (auto& s : schedulers_) subs.push_back(s->state_dict());
  d["_schedulers"] = Value::list(std::move(subs));
  return d;
}
void SequentialLR::load_state_dict(const Value& state) {
  EMBER_CHECK(state.is_dict(), "load_state_dict: expected a dict, got ", value_kind_name(state.kind()));
  if (state.contains("_milestones")) milestones_ = to_ivec(state.at("_milestones"));
  if (state.contains("last_epoch")) last_epoch_ = state.at("last_epoch").to_int();
  if (state.contains("_last_lr")) last_lr_ = to_dvec(state.at("_last_lr"));
  if (state.contains("_schedulers")) {
    const auto& subs = state.at("_schedulers").items_list();
    EMBER_CHECK(subs.size() == schedulers_.size(), "SequentialLR.load_state_dict: expected ", schedulers_.size(),
                " scheduler states, got ", subs.size());
    for (size_t i = 0; i < subs.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
  }
}

// ---------------------------------------------------------------- OneCycleLR

namespace {
int64_t onecycle_total(const OneCycleOptions& o) {
  if (o.total_steps) {
    EMBER_CHECK_VALUE(*o.total_steps > 0, "Expected positive integer total_steps, but got ", *o.total_steps);
    return *o.total_steps;
  }
  EMBER_CHECK_VALUE(o.epochs && o.steps_per_epoch, "You must define either total_steps OR (epochs AND steps_per_epoch)");
  EMBER_CHECK_VALUE(*o.epochs > 0, "Expected positive integer epochs, but got ", *o.epochs);
  EMBER_CHECK_VALUE(*o.steps_per_epoch > 0, "Expected positive integer steps_per_epoch, but got ", *o.steps_per_epoch);
  return *o.epochs * *o.steps_per_epoch;
}
// Replaces betas[0], keeping the container's kind (Values share sequences when copied).
void set_beta1(Value& g, double beta1) {
  const Value& old = g.at("betas");
  ValueList items = old.items_list();
  EMBER_CHECK_VALUE(!items.empty(), "OneCycleLR: empty betas");
  items[0] = beta1;
  g["betas"] = old.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}
// Sets up the group options before the base constructor reads initial_lr.
Optimizer& onecycle_prepare(Optimizer& opt, const std::vector<double>& max_lrs, const OneCycleOptions& o,
                            int64_t last_epoch) {
  EMBER_CHECK_VALUE(max_lrs.size() == 1 || max_lrs.size() == opt.param_groups.size(), "expected ",
                    opt.param_groups.size(), " values for max_lr, got ", max_lrs.size());
  EMBER_CHECK_VALUE(o.pct_start >= 0 && o.pct_start <= 1, "Expected float between 0 and 1 pct_start, but got ",
                    o.pct_start);
  EMBER_CHECK_VALUE(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
                    "anneal_strategy must by one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  onecycle_total(o);
  auto& groups = opt.param_groups;
  if (last_epoch == -1) {
    for (size_t i = 0; i < groups.size(); ++i) {
      double m = max_lrs.size() == 1 ? max_lrs[0] : max_lrs[i];
      auto& g = groups[i].options;
      g["initial_lr"] = m / o.div_factor;
      g["max_lr"] = m;
      g["min_lr"] = g.at("initial_lr").to_double() / o.final_div_factor;
    }
  }
  if (o.cycle_momentum) {
    bool has = !groups.empty() && (groups[0].options.contains("momentum") || groups[0].options.contains("betas"));
    EMBER_CHECK_VALUE(has, "optimizer must support momentum with `cycle_momentum` option enabled");
    bool beta1 = groups[0].options.contains("betas");
    if (last_epoch == -1) {
      for (auto& grp : groups) {
        auto& g = grp.options;
        if (beta1)
          set_beta1(g, o.max_momentum);
        else
          g["momentum"] = o.max_momentum;
        g["max_momentum"] = o.max_momentum;
        g["base_momentum"] = o.base_momentum;
      }
    }
  }
  return opt;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, OneCycleOptions o, int64_t last_epoch)
    : OneCycleLR(opt, std::vector<double>{max_lr}, std::move(o), last_epoch) {}

OneCycleLR::OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleOptions o, int64_t last_epoch)
    : LRScheduler(onecycle_prepare(opt, max_lrs, o, last_epoch), last_epoch), total_steps_(onecycle_total(o)),
      linear_(o.anneal_strategy == "linear"), cycle_momentum_(o.cycle_momentum) {
  const double T = double(total_steps_);
  if (o.three_phase) {
    phases_ = {{double(o.pct_start * T) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {double(2 * o.pct_start * T) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {T - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{double(o.pct_start * T) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {T - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
  use_beta1_ = cycle_momentum_ && opt.param_groups[0].options.contains("betas");
  initial_step();
}
double OneCycleLR::anneal(double start, double end, double pct) const {
  if (linear_) return (end - start) * pct + start;
  double cos_out = std::cos(kPi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}
std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  EMBER_CHECK_VALUE(step_num <= total_steps_, "Tried to step ", step_num + 1,
                    " times. The specified number of total steps is ", total_steps_);
  std::vector<double> lrs;
  for (auto& grp : optimizer_->param_groups) {
    auto& g = grp.options;
    double start_step = 0, lr = 0, mom = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (double(step_num) <= ph.end_step || i == phases_.size() - 1) {
        double pct = (double(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(g.at(ph.start_lr).to_double(), g.at(ph.end_lr).to_double(), pct);
        if (cycle_momentum_) mom = anneal(g.at(ph.start_mom).to_double(), g.at(ph.end_mom).to_double(), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) {
      if (use_beta1_)
        set_beta1(g, mom);
      else
        g["momentum"] = mom;
    }
  }
  return lrs;
}
void OneCycleLR::save_extra(Value& d) const {
  d["total_steps"] = total_steps_;
  d["cycle_momentum"] = cycle_momentum_;
  d["use_beta1"] = use_beta1_;
  d["anneal_strategy"] = linear_ ? "linear" : "cos";
}
void OneCycleLR::load_extra(const Value& d) {
  if (d.contains("total_steps")) total_steps_ = d.at("total_steps").to_int();
}

// ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, PlateauOptions o) : optimizer_(&opt), o_(std::move(o)) {
  EMBER_CHECK_VALUE(o_.factor < 1.0, "Factor should be < 1.0.");
  EMBER_CHECK_VALUE(o_.mode == "min" || o_.mode == "max", "mode ", o_.mode, " is unknown!");
  EMBER_CHECK_VALUE(o_.threshold_mode == "rel" || o_.threshold_mode == "abs", "threshold mode ", o_.threshold_mode,
                    " is unknown!");
  const size_t n = opt.param_groups.size();
  if (o_.min_lrs.size() == 1) {
    min_lrs_.assign(n, o_.min_lrs[0]);
  } else {
    EMBER_CHECK_VALUE(o_.min_lrs.size() == n, "expected ", n, " min_lrs, got ", o_.min_lrs.size());
    min_lrs_ = o_.min_lrs;
  }
  best_ = o_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (auto& g : opt.param_groups) last_lr_.push_back(g.lr());
}
bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (o_.mode == "min" && o_.threshold_mode == "rel") return a < best * (1. - o_.threshold);
  if (o_.mode == "min") return a < best - o_.threshold;
  if (o_.threshold_mode == "rel") return a > best * (o_.threshold + 1.);
  return a > best + o_.threshold;
}
void ReduceLROnPlateau::step(double current) {
  last_epoch_ = last_epoch_ + 1;
  if (is_better(current, best_)) {
    best_ = current;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > o_.patience) {
    auto& groups = optimizer_->param_groups;
    for (size_t i = 0; i < groups.size(); ++i) {
      double old_lr = groups[i].lr();
      double new_lr = std::max(old_lr * o_.factor, min_lrs_[i]);
      if (old_lr - new_lr > o_.eps) groups[i].set_lr(new_lr);
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (auto& g : optimizer_->param_groups) last_lr_.push_back(g.lr());
}
Value ReduceLROnPlateau::state_dict() const {
  Value d = Value::dict();
  d["factor"] = o_.factor;
  d["min_lrs"] = dlist(min_lrs_);
  d["patience"] = o_.patience;
  d["cooldown"] = o_.cooldown;
  d["cooldown_counter"] = cooldown_counter_;
  d["mode"] = o_.mode;
  d["threshold"] = o_.threshold;
  d["threshold_mode"] = o_.threshold_mode;
  d["best"] = best_;
  d["num_bad_epochs"] = num_bad_epochs_;
  d["eps"] = o_.eps;
  d["last_epoch"] = last_epoch_;
  d["_last_lr"] = dlist(last_lr_);
  return d;
}
void ReduceLROnPlateau::load_state_dict(const Value& d) {
  EMBER_CHECK(d.is_dict(), "load_state_dict: expected a dict, got ", value_kind_name(d.kind()));
  if (d.contains("factor")) o_.factor = d.at("factor").to_double();
  if (d.contains("min_lrs")) min_lrs_ = to_dvec(d.at("min_lrs"));
  if (d.contains("patience")) o_.patience = d.at("patience").to_int();
  if (d.contains("cooldown")) o_.cooldown = d.at("cooldown").to_int();
  if (d.contains("cooldown_counter")) cooldown_counter_ = d.at("cooldown_counter").to_int();
  if (d.contains("mode")) o_.mode = d.at("mode").to_string();
  if (d.contains("threshold")) o_.threshold = d.at("threshold").to_double();
  if (d.contains("threshold_mode")) o_.threshold_mode = d.at("threshold_mode").to_string();
  if (d.contains("best")) best_ = d.at("best").to_double();
  if (d.contains("num_bad_epochs")) num_bad_epochs_ = d.at("num_bad_epochs").to_int();
  if (d.contains("eps")) o_.eps = d.at("eps").to_double();
  if (d.contains("last_epoch")) last_epoch_ = d.at("last_epoch").to_int();
  if (d.contains("_last_lr")) last_lr_ = to_dvec(d.at("_last_lr"));
  EMBER_CHECK_VALUE(o_.mode == "min" || o_.mode == "max", "mode ", o_.mode, " is unknown!");
  EMBER_CHECK_VALUE(o_.threshold_mode == "rel" || o_.threshold_mode == "abs", "threshold mode ", o_.threshold_mode,
                    " is unknown!");
}

}  // namespace ember::optim

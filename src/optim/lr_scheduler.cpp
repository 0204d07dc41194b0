// The C++ schedulers: state and param-group plumbing around lr_rules.h's formulas (torch's
// torch/optim/lr_scheduler.py semantics, sequences equal to PyTorch's to the last bit).
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>

#include "ember/core/errors.h"

namespace ember::optim {

namespace R = lr_rules;

namespace {
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
std::vector<double> as_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }
// A value given once for all groups or once per group, as one value per group.
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const std::string& what) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  R::check_group_count(what, groups, v.size());
  return v;
}
// Replaces betas[0], keeping the container's kind (Values share sequences when copied).
void set_beta1(Value& g, double beta1) {
  const Value& old = g.at("betas");
  ValueList items = old.items_list();
  EMBER_CHECK_VALUE(!items.empty(), "empty betas");
  items[0] = beta1;
  g["betas"] = old.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
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
  R::check_step_size(double(step_size));
  initial_step();
}
std::vector<double> StepLR::get_lr() { return R::step_lr(double(last_epoch_), group_lrs(), double(step_size_), gamma_); }
std::optional<std::vector<double>> StepLR::closed_form_lr() {
  return R::step_lr_closed(double(last_epoch_), base_lrs_, double(step_size_), gamma_);
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
  return R::multistep_lr(double(last_epoch_), group_lrs(), as_doubles(milestones_), gamma_);
}
std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  return R::multistep_lr_closed(double(last_epoch_), base_lrs_, as_doubles(milestones_), gamma_);
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
std::vector<double> ExponentialLR::get_lr() { return R::exponential_lr(double(last_epoch_), group_lrs(), gamma_); }
std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  return R::exponential_lr_closed(double(last_epoch_), base_lrs_, gamma_);
}
void ExponentialLR::save_extra(Value& d) const { d["gamma"] = gamma_; }
void ExponentialLR::load_extra(const Value& d) {
  if (d.contains("gamma")) gamma_ = d.at("gamma").to_double();
}

// ---------------------------------------------------------------- PolynomialLR

PolynomialLR::PolynomialLR(Optimizer& opt, int64_t total_iters, double power, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), total_iters_(total_iters), power_(power) {
  initial_step();
}
std::vector<double> PolynomialLR::get_lr() {
  return R::polynomial_lr(double(last_epoch_), group_lrs(), double(total_iters_), power_);
}
std::optional<std::vector<double>> PolynomialLR::closed_form_lr() {
  return R::polynomial_lr_closed(double(last_epoch_), base_lrs_, double(total_iters_), power_);
}
void PolynomialLR::save_extra(Value& d) const { d["total_iters"] = total_iters_; d["power"] = power_; }
void PolynomialLR::load_extra(const Value& d) {
  if (d.contains("total_iters")) total_iters_ = d.at("total_iters").to_int();
  if (d.contains("power")) power_ = d.at("power").to_double();
}

// ---------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  R::check_t_max(double(T_max));
  initial_step();
}
std::vector<double> CosineAnnealingLR::get_lr() {
  return R::cosine_annealing_lr(double(last_epoch_), group_lrs(), base_lrs_, double(T_max_), eta_min_,
                                step_count_ == 1);
}
std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  return R::cosine_annealing_lr_closed(double(last_epoch_), base_lrs_, double(T_max_), eta_min_);
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
  R::check_warm_restarts(T_0, T_mult);
  initial_step();
}
std::vector<double> CosineAnnealingWarmRestarts::get_lr() { return R::warm_restarts_lr(base_lrs_, T_cur_, T_i_, eta_min_); }
void CosineAnnealingWarmRestarts::advance(std::optional<double> epoch) {
  auto next = R::warm_restarts_step(epoch, {last_epoch_, T_cur_, T_i_}, T_0_, T_mult_);
  last_epoch_ = next.last_epoch;
  T_cur_ = next.T_cur;
  T_i_ = next.T_i;
  ++step_count_;
  apply_lrs(get_lr());
}
void CosineAnnealingWarmRestarts::step(std::optional<int64_t> epoch) {
  advance(epoch ? std::optional<double>(double(*epoch)) : std::nullopt);
}
void CosineAnnealingWarmRestarts::step_at(double epoch) { advance(epoch); }
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
  R::check_linear_factors(start_factor, end_factor);
  initial_step();
}
std::vector<double> LinearLR::get_lr() {
  return R::linear_lr(double(last_epoch_), group_lrs(), start_factor_, end_factor_, double(total_iters_));
}
std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  return R::linear_lr_closed(double(last_epoch_), base_lrs_, start_factor_, end_factor_, double(total_iters_));
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
  R::check_constant_factor(factor);
  initial_step();
}
std::vector<double> ConstantLR::get_lr() {
  return R::constant_lr(double(last_epoch_), group_lrs(), factor_, double(total_iters_));
}
std::optional<std::vector<double>> ConstantLR::closed_form_lr() {
  return R::constant_lr_closed(double(last_epoch_), base_lrs_, factor_, double(total_iters_));
}
void ConstantLR::save_extra(Value& d) const { d["factor"] = factor_; d["total_iters"] = total_iters_; }
void ConstantLR::load_extra(const Value& d) {
  if (d.contains("factor")) factor_ = d.at("factor").to_double();
  if (d.contains("total_iters")) total_iters_ = d.at("total_iters").to_int();
}

// ---------------------------------------------------------------- LambdaLR, MultiplicativeLR

namespace {
// Functions are not state: torch stores None for plain functions.
Value no_lambdas(size_t n) { return Value::list(ValueList(n)); }
}  // namespace

LambdaLR::LambdaLR(Optimizer& opt, Lambda lr_lambda, int64_t last_epoch)
    : LambdaLR(opt, std::vector<Lambda>(opt.param_groups.size(), lr_lambda), last_epoch) {}
LambdaLR::LambdaLR(Optimizer& opt, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), lambdas_(std::move(lr_lambdas)) {
  R::check_lambda_count(opt.param_groups.size(), lambdas_.size());
  initial_step();
}
std::vector<double> LambdaLR::get_lr() { return R::lambda_lr(last_epoch_, base_lrs_, lambdas_); }
void LambdaLR::save_extra(Value& d) const { d["lr_lambdas"] = no_lambdas(lambdas_.size()); }

MultiplicativeLR::MultiplicativeLR(Optimizer& opt, Lambda lr_lambda, int64_t last_epoch)
    : MultiplicativeLR(opt, std::vector<Lambda>(opt.param_groups.size(), lr_lambda), last_epoch) {}
MultiplicativeLR::MultiplicativeLR(Optimizer& opt, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), lambdas_(std::move(lr_lambdas)) {
  R::check_lambda_count(opt.param_groups.size(), lambdas_.size());
  initial_step();
}
std::vector<double> MultiplicativeLR::get_lr() { return R::multiplicative_lr(last_epoch_, group_lrs(), lambdas_); }
void MultiplicativeLR::save_extra(Value& d) const { d["lr_lambdas"] = no_lambdas(lambdas_.size()); }

// ---------------------------------------------------------------- SequentialLR

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(opt, -1), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  for (size_t i = 0; i < schedulers_.size(); ++i)
    EMBER_CHECK_VALUE(schedulers_[i] && schedulers_[i]->optimizer_ == &opt,
                      "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
                      "schedulers at index ",
                      i, " to be different than the optimizer passed in.");
  R::check_sequential(schedulers_.size(), milestones_.size());
  last_epoch_ = last_epoch + 1;
  // Undo the constructors' initial steps and restart from the first scheduler.
  for (auto& g : opt.param_groups) g.set_lr(g.options.at("initial_lr").to_double());
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}
void SequentialLR::step(std::optional<int64_t>) {
  ++last_epoch_;
  auto pick = R::sequential_pick(as_doubles(milestones_), double(last_epoch_));
  auto& s = schedulers_[pick.index];
  if (pick.restart)
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

// ---------------------------------------------------------------- ChainedScheduler

namespace {
Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  EMBER_CHECK_VALUE(!schedulers.empty() && schedulers[0], "ChainedScheduler: expected at least one scheduler");
  return schedulers[0]->optimizer();
}
}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(first_optimizer(schedulers), -1), schedulers_(std::move(schedulers)) {
  for (size_t i = 1; i < schedulers_.size(); ++i)
    EMBER_CHECK_VALUE(schedulers_[i] && &schedulers_[i]->optimizer() == optimizer_,
                      "ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                      "schedulers at index 0 and ",
                      i, " to be different");
  last_lr_ = group_lrs();
}
void ChainedScheduler::step(std::optional<int64_t>) {
  for (auto& s : schedulers_) s->step();
  last_lr_ = group_lrs();
}
Value ChainedScheduler::state_dict() const {
  Value d = Value::dict();
  d["_last_lr"] = dlist(last_lr_);
  ValueList subs;
  for (auto& s : schedulers_) subs.push_back(s->state_dict());
  d["_schedulers"] = Value::list(std::move(subs));
  return d;
}
void ChainedScheduler::load_state_dict(const Value& state) {
  EMBER_CHECK(state.is_dict(), "load_state_dict: expected a dict, got ", value_kind_name(state.kind()));
  if (state.contains("_last_lr")) last_lr_ = to_dvec(state.at("_last_lr"));
  if (state.contains("_schedulers")) {
    const auto& subs = state.at("_schedulers").items_list();
    EMBER_CHECK(subs.size() == schedulers_.size(), "ChainedScheduler.load_state_dict: expected ",
                schedulers_.size(), " scheduler states, got ", subs.size());
    for (size_t i = 0; i < subs.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
  }
}

// ---------------------------------------------------------------- CyclicLR

namespace {
// Before the base constructor reads initial_lr: a fresh schedule starts each group at base_lr
// and momentum at base_momentum.
Optimizer& cyclic_prepare(Optimizer& opt, const std::vector<double>& base_lrs, const CyclicOptions& o,
                          int64_t last_epoch) {
  auto& groups = opt.param_groups;
  auto lows = per_group(base_lrs, groups.size(), "values for base_lr");
  if (last_epoch == -1)
    for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lows[i]);
  if (o.cycle_momentum) {
    R::check_cycle_momentum(!groups.empty() && groups[0].options.contains("momentum"));
    auto moms = per_group(o.base_momentum, groups.size(), "values for base_momentum");
    if (last_epoch == -1)
      for (size_t i = 0; i < groups.size(); ++i) groups[i].options["momentum"] = moms[i];
  }
  return opt;
}
}  // namespace

CyclicLR::CyclicLR(Optimizer& opt, double base_lr, double max_lr, CyclicOptions o, int64_t last_epoch)
    : CyclicLR(opt, std::vector<double>{base_lr}, std::vector<double>{max_lr}, std::move(o), last_epoch) {}

CyclicLR::CyclicLR(Optimizer& opt, std::vector<double> base_lrs, std::vector<double> max_lrs, CyclicOptions o,
                   int64_t last_epoch)
    : LRScheduler(cyclic_prepare(opt, base_lrs, o, last_epoch), last_epoch),
      max_lrs_(per_group(max_lrs, opt.param_groups.size(), "values for max_lr")),
      shape_(R::cyclic_shape(o.step_size_up, o.step_size_down, o.mode, bool(o.scale_fn), o.scale_mode)),
      mode_(o.mode), gamma_(o.gamma), scale_fn_(std::move(o.scale_fn)), cycle_momentum_(o.cycle_momentum) {
  if (cycle_momentum_) {
    for (auto& g : opt.param_groups) base_momenta_.push_back(g.options.at("momentum").to_double());
    max_momenta_ = per_group(o.max_momentum, opt.param_groups.size(), "values for max_momentum");
  }
  initial_step();
  // As torch: the first step ran from initial_lr; base_lr is the cycle's floor from now on.
  base_lrs_ = per_group(base_lrs, opt.param_groups.size(), "values for base_lr");
}
std::vector<double> CyclicLR::get_lr() {
  std::function<double(int64_t)> scale = scale_fn_;
  if (!scale) scale = [this](int64_t x) { return R::cyclic_scale(mode_, gamma_, double(x)); };
  auto v = R::cyclic_lr(last_epoch_, shape_, scale, base_lrs_, max_lrs_, base_momenta_, max_momenta_);
  auto& groups = optimizer_->param_groups;
  for (size_t i = 0; i < v.momenta.size() && i < groups.size(); ++i) groups[i].options["momentum"] = v.momenta[i];
  return v.lrs;
}
void CyclicLR::save_extra(Value& d) const {
  d["max_lrs"] = dlist(max_lrs_);
  d["total_size"] = shape_.total_size;
  d["step_ratio"] = shape_.step_ratio;
  d["mode"] = mode_;
  d["gamma"] = gamma_;
  d["scale_mode"] = shape_.scale_mode;
  d["cycle_momentum"] = cycle_momentum_;
  if (cycle_momentum_) {
    d["base_momentums"] = dlist(base_momenta_);
    d["max_momentums"] = dlist(max_momenta_);
  }
}
void CyclicLR::load_extra(const Value& d) {
  if (d.contains("max_lrs")) max_lrs_ = to_dvec(d.at("max_lrs"));
  if (d.contains("total_size")) shape_.total_size = d.at("total_size").to_double();
  if (d.contains("step_ratio")) shape_.step_ratio = d.at("step_ratio").to_double();
  if (d.contains("mode")) mode_ = d.at("mode").to_string();
  if (d.contains("gamma")) gamma_ = d.at("gamma").to_double();
  if (d.contains("scale_mode")) shape_.scale_mode = d.at("scale_mode").to_string();
  if (d.contains("base_momentums")) base_momenta_ = to_dvec(d.at("base_momentums"));
  if (d.contains("max_momentums")) max_momenta_ = to_dvec(d.at("max_momentums"));
}

// ---------------------------------------------------------------- OneCycleLR

namespace {
int64_t onecycle_total(const OneCycleOptions& o) {
  return R::one_cycle_total_steps(o.total_steps, o.epochs, o.steps_per_epoch);
}
// Sets up the group options before the base constructor reads initial_lr.
Optimizer& onecycle_prepare(Optimizer& opt, const std::vector<double>& max_lrs, const OneCycleOptions& o,
                            int64_t last_epoch) {
  auto& groups = opt.param_groups;
  auto highs = per_group(max_lrs, groups.size(), "values for max_lr");
  R::check_one_cycle(o.pct_start, o.anneal_strategy);
  onecycle_total(o);
  if (last_epoch == -1) {
    for (size_t i = 0; i < groups.size(); ++i) {
      auto lrs = R::one_cycle_lrs(highs[i], o.div_factor, o.final_div_factor);
      auto& g = groups[i].options;
      g["initial_lr"] = lrs.initial_lr;
      g["max_lr"] = highs[i];
      g["min_lr"] = lrs.min_lr;
    }
  }
  if (o.cycle_momentum) {
    R::check_cycle_momentum(!groups.empty() &&
                            (groups[0].options.contains("momentum") || groups[0].options.contains("betas")));
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
      phases_(R::one_cycle_phases(total_steps_, o.pct_start, o.three_phase)), anneal_strategy_(o.anneal_strategy),
      cycle_momentum_(o.cycle_momentum) {
  use_beta1_ = cycle_momentum_ && opt.param_groups[0].options.contains("betas");
  initial_step();
}
std::vector<double> OneCycleLR::get_lr() {
  std::vector<double> ends;
  for (auto& ph : phases_) ends.push_back(ph.end_step);
  auto at = R::one_cycle_point(double(last_epoch_), total_steps_, ends);
  const auto& ph = phases_[at.phase];
  std::vector<double> lrs;
  for (auto& grp : optimizer_->param_groups) {
    auto& g = grp.options;
    lrs.push_back(R::anneal(anneal_strategy_, g.at(ph.start_lr).to_double(), g.at(ph.end_lr).to_double(), at.pct));
    if (!cycle_momentum_) continue;
    double mom = R::anneal(anneal_strategy_, g.at(ph.start_momentum).to_double(), g.at(ph.end_momentum).to_double(),
                           at.pct);
    if (use_beta1_)
      set_beta1(g, mom);
    else
      g["momentum"] = mom;
  }
  return lrs;
}
void OneCycleLR::save_extra(Value& d) const {
  d["total_steps"] = total_steps_;
  d["cycle_momentum"] = cycle_momentum_;
  d["use_beta1"] = use_beta1_;
  d["anneal_strategy"] = anneal_strategy_;
}
void OneCycleLR::load_extra(const Value& d) {
  if (d.contains("total_steps")) total_steps_ = d.at("total_steps").to_int();
}

// ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, PlateauOptions o) : optimizer_(&opt), o_(std::move(o)) {
  R::check_plateau_factor(o_.factor);
  R::check_plateau_modes(o_.mode, o_.threshold_mode);
  min_lrs_ = per_group(o_.min_lrs, opt.param_groups.size(), "min_lrs");
  state_ = {R::plateau_worst(o_.mode), 0, 0};
  for (auto& g : opt.param_groups) last_lr_.push_back(g.lr());
}
void ReduceLROnPlateau::step(double metric) {
  last_epoch_ = last_epoch_ + 1;
  auto next = R::plateau_step(metric, state_, o_.mode, o_.threshold_mode, o_.threshold, double(o_.patience), o_.cooldown);
  state_ = next.state;
  auto& groups = optimizer_->param_groups;
  if (next.reduce) {
    std::vector<double> lrs;
    for (auto& g : groups) lrs.push_back(g.lr());
    auto reduced = R::plateau_reduce(lrs, o_.factor, min_lrs_, o_.eps);
    for (size_t i = 0; i < groups.size(); ++i)
      if (reduced[i]) groups[i].set_lr(*reduced[i]);
  }
  last_lr_.clear();
  for (auto& g : groups) last_lr_.push_back(g.lr());
}
Value ReduceLROnPlateau::state_dict() const {
  Value d = Value::dict();
  d["factor"] = o_.factor;
  d["min_lrs"] = dlist(min_lrs_);
  d["patience"] = o_.patience;
  d["cooldown"] = o_.cooldown;
  d["cooldown_counter"] = state_.cooldown_counter;
  d["mode"] = o_.mode;
  d["threshold"] = o_.threshold;
  d["threshold_mode"] = o_.threshold_mode;
  d["best"] = state_.best;
  d["num_bad_epochs"] = state_.num_bad_epochs;
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
  if (d.contains("cooldown_counter")) state_.cooldown_counter = d.at("cooldown_counter").to_int();
  if (d.contains("mode")) o_.mode = d.at("mode").to_string();
  if (d.contains("threshold")) o_.threshold = d.at("threshold").to_double();
  if (d.contains("threshold_mode")) o_.threshold_mode = d.at("threshold_mode").to_string();
  if (d.contains("best")) state_.best = d.at("best").to_double();
  if (d.contains("num_bad_epochs")) state_.num_bad_epochs = d.at("num_bad_epochs").to_int();
  if (d.contains("eps")) o_.eps = d.at("eps").to_double();
  if (d.contains("last_epoch")) last_epoch_ = d.at("last_epoch").to_int();
  if (d.contains("_last_lr")) last_lr_ = to_dvec(d.at("_last_lr"));
  R::check_plateau_modes(o_.mode, o_.threshold_mode);
}

}  // namespace ember::optim

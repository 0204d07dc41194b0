// The lr schedulers' rules (see lr_rules.h): torch/optim/lr_scheduler.py's formulas, in its
// order of operations so that the sequences equal PyTorch's bit for bit.
#include "ember/optim/lr_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/core/errors.h"
#include "ember/optim/optimizer.h"

namespace ember::optim::lr_rules {

namespace {
using std::numbers::pi;

// Python's float % and //: the remainder takes the divisor's sign (torch's formulas are Python).
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
double py_floordiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double floor = std::floor(div);
  return div - floor > 0.5 ? floor + 1.0 : floor;
}

// Each value times `factor`.
Values scaled(const Values& lrs, double factor) {
  Values out(lrs);
  for (double& lr : out) lr = lr * factor;
  return out;
}
}  // namespace

void check_group_count(const std::string& what, size_t groups, size_t got) {
  EMBER_CHECK_VALUE(groups == got, "expected ", groups, " ", what, ", got ", got);
}

void check_cycle_momentum(bool supported) {
  EMBER_CHECK_VALUE(supported, "optimizer must support momentum with `cycle_momentum` option enabled");
}

// ---------------------------------------------------------------- StepLR

void check_step_size(double step_size) {
  // A step_size of 0 would divide by zero at the first step.
  EMBER_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
}
Values step_lr(double epoch, const Values& lrs, double step_size, double gamma) {
  check_step_size(step_size);
  if (epoch == 0 || py_mod(epoch, step_size) != 0) return lrs;
  return scaled(lrs, gamma);
}
Values step_lr_closed(double epoch, const Values& base_lrs, double step_size, double gamma) {
  check_step_size(step_size);
  Values out;
  for (double b : base_lrs) out.push_back(b * std::pow(gamma, py_floordiv(epoch, step_size)));
  return out;
}

// ---------------------------------------------------------------- MultiStepLR

Values multistep_lr(double epoch, const Values& lrs, const Values& milestones, double gamma) {
  auto count = std::count(milestones.begin(), milestones.end(), epoch);
  if (count == 0) return lrs;
  return scaled(lrs, std::pow(gamma, double(count)));
}
Values multistep_lr_closed(double epoch, const Values& base_lrs, const Values& milestones, double gamma) {
  // bisect_right over the sorted milestones = how many are <= epoch.
  auto passed = std::count_if(milestones.begin(), milestones.end(), [&](double m) { return m <= epoch; });
  Values out;
  for (double b : base_lrs) out.push_back(b * std::pow(gamma, double(passed)));
  return out;
}

// ---------------------------------------------------------------- ConstantLR

void check_constant_factor(double factor) {
  EMBER_CHECK_VALUE(factor <= 1.0 && factor >= 0, "Constant multiplicative factor expected to be between 0 and 1.");
}
Values constant_lr(double epoch, const Values& lrs, double factor, double total_iters) {
  if (epoch == 0) return scaled(lrs, factor);
  if (epoch != total_iters) return lrs;
  return scaled(lrs, 1.0 / factor);
}
Values constant_lr_closed(double epoch, const Values& base_lrs, double factor, double total_iters) {
  Values out;
  for (double b : base_lrs) out.push_back(b * (factor + double(epoch >= total_iters) * (1 - factor)));
  return out;
}

// ---------------------------------------------------------------- LinearLR

void check_linear_factors(double start_factor, double end_factor) {
  EMBER_CHECK_VALUE(start_factor <= 1.0 && start_factor >= 0,
                    "Starting multiplicative factor expected to be between 0 and 1.");
  EMBER_CHECK_VALUE(end_factor <= 1.0 && end_factor >= 0, "Ending multiplicative factor expected to be between 0 and 1.");
}
Values linear_lr(double epoch, const Values& lrs, double start_factor, double end_factor, double total_iters) {
  if (epoch == 0) return scaled(lrs, start_factor);
  if (epoch > total_iters) return lrs;
  // The ratio of this epoch's factor to the previous one's.
  const double d = end_factor - start_factor;
  return scaled(lrs, 1. + d / (total_iters * start_factor + (epoch - 1) * d));
}
Values linear_lr_closed(double epoch, const Values& base_lrs, double start_factor, double end_factor,
                        double total_iters) {
  Values out;
  for (double b : base_lrs)
    out.push_back(b * (start_factor + (end_factor - start_factor) * std::min(total_iters, epoch) / total_iters));
  return out;
}

// ---------------------------------------------------------------- ExponentialLR

Values exponential_lr(double epoch, const Values& lrs, double gamma) {
  if (epoch == 0) return lrs;
  return scaled(lrs, gamma);
}
Values exponential_lr_closed(double epoch, const Values& base_lrs, double gamma) {
  Values out;
  for (double b : base_lrs) out.push_back(b * std::pow(gamma, epoch));
  return out;
}

// ---------------------------------------------------------------- PolynomialLR

Values polynomial_lr(double epoch, const Values& lrs, double total_iters, double power) {
  if (epoch == 0 || epoch > total_iters) return lrs;
  const double t = epoch, n = total_iters;
  return scaled(lrs, std::pow((1.0 - t / n) / (1.0 - (t - 1) / n), power));
}
Values polynomial_lr_closed(double epoch, const Values& base_lrs, double total_iters, double power) {
  Values out;
  for (double b : base_lrs) out.push_back(b * std::pow(1.0 - std::min(total_iters, epoch) / total_iters, power));
  return out;
}

// ---------------------------------------------------------------- cosine annealing

double cosine_between(double start, double end, double angle) {
  return end + (start - end) * (1 + std::cos(angle)) / 2;
}

void check_t_max(double T_max) {
  EMBER_CHECK_VALUE(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
}
Values cosine_annealing_lr(double epoch, const Values& lrs, const Values& base_lrs, double T_max, double eta_min,
                           bool first_step) {
  check_t_max(T_max);
  if (epoch == 0) return lrs;
  if (first_step && epoch > 0) return cosine_annealing_lr_closed(epoch, base_lrs, T_max, eta_min);
  Values out(lrs);
  if (py_mod(epoch - 1 - T_max, 2 * T_max) == 0) {
    // At the bottom of a cycle the ratio below is 0/0: step up from eta_min instead.
    for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] + (base_lrs[i] - eta_min) * (1 - std::cos(pi / T_max)) / 2;
    return out;
  }
  for (double& lr : out)
    lr = (1 + std::cos(pi * epoch / T_max)) / (1 + std::cos(pi * (epoch - 1) / T_max)) * (lr - eta_min) + eta_min;
  return out;
}
Values cosine_annealing_lr_closed(double epoch, const Values& base_lrs, double T_max, double eta_min) {
  check_t_max(T_max);
  Values out;
  for (double b : base_lrs) out.push_back(cosine_between(b, eta_min, pi * epoch / T_max));
  return out;
}

// ---------------------------------------------------------------- CosineAnnealingWarmRestarts

void check_warm_restarts(int64_t T_0, int64_t T_mult) {
  EMBER_CHECK_VALUE(T_0 > 0, "Expected positive integer T_0, but got ", T_0);
  EMBER_CHECK_VALUE(T_mult >= 1, "Expected integer T_mult >= 1, but got ", T_mult);
}
WarmRestartsState warm_restarts_step(std::optional<double> epoch, const WarmRestartsState& state, int64_t T_0,
                                     int64_t T_mult) {
  WarmRestartsState next = state;
  if (!epoch && state.last_epoch < 0) epoch = 0;  // the constructor's step starts the first period
  if (!epoch) {
    next.last_epoch = state.last_epoch + 1;
    next.T_cur = state.T_cur + 1;
    if (next.T_cur >= double(next.T_i)) {
      next.T_cur = next.T_cur - double(next.T_i);
      next.T_i = next.T_i * T_mult;
    }
    return next;
  }
  const double e = *epoch;
  EMBER_CHECK_VALUE(e >= 0, "Expected non-negative epoch, but got ", e);
  if (e >= double(T_0)) {
    if (T_mult == 1) {
      next.T_cur = py_mod(e, double(T_0));
    } else {
      // Restarts completed by `e`: periods sum to T_0 * (T_mult^n - 1) / (T_mult - 1).
      auto n = int64_t(std::log(e / double(T_0) * double(T_mult - 1) + 1) / std::log(double(T_mult)));
      const double tm_n = std::pow(double(T_mult), double(n));
      next.T_cur = e - double(T_0) * (tm_n - 1) / double(T_mult - 1);
      next.T_i = T_0 * int64_t(tm_n);
    }
  } else {
    next.T_i = T_0;
    next.T_cur = e;
  }
  next.last_epoch = int64_t(std::floor(e));
  return next;
}
Values warm_restarts_lr(const Values& base_lrs, double T_cur, int64_t T_i, double eta_min) {
  Values out;
  for (double b : base_lrs) out.push_back(cosine_between(b, eta_min, pi * T_cur / double(T_i)));
  return out;
}

// ---------------------------------------------------------------- LambdaLR, MultiplicativeLR

void check_lambda_count(size_t groups, size_t lambdas) {
  EMBER_CHECK_VALUE(groups == lambdas, "Expected ", groups, " lr_lambdas, but got ", lambdas);
}
Values lambda_lr(int64_t epoch, const Values& base_lrs, const std::vector<EpochFn>& lr_lambdas) {
  check_lambda_count(base_lrs.size(), lr_lambdas.size());
  Values out;
  for (size_t i = 0; i < base_lrs.size(); ++i) out.push_back(base_lrs[i] * lr_lambdas[i](epoch));
  return out;
}
Values multiplicative_lr(int64_t epoch, const Values& lrs, const std::vector<EpochFn>& lr_lambdas) {
  check_lambda_count(lrs.size(), lr_lambdas.size());
  if (epoch <= 0) return lrs;
  Values out;
  for (size_t i = 0; i < lrs.size(); ++i) out.push_back(lrs[i] * lr_lambdas[i](epoch));
  return out;
}

// ---------------------------------------------------------------- CyclicLR

CyclicShape cyclic_shape(double step_size_up, std::optional<double> step_size_down, const std::string& mode,
                         bool has_scale_fn, const std::string& scale_mode) {
  const double down = step_size_down ? *step_size_down : step_size_up;
  CyclicShape shape;
  shape.total_size = step_size_up + down;
  shape.step_ratio = step_size_up / shape.total_size;
  const bool builtin = mode == "triangular" || mode == "triangular2" || mode == "exp_range";
  EMBER_CHECK_VALUE(builtin || has_scale_fn, "mode is invalid and scale_fn is None");
  if (has_scale_fn)
    shape.scale_mode = scale_mode;
  else
    shape.scale_mode = mode == "exp_range" ? "iterations" : "cycle";
  return shape;
}
double cyclic_scale(const std::string& mode, double gamma, double x) {
  if (mode == "triangular") return 1.0;
  if (mode == "triangular2") return 1 / std::pow(2.0, x - 1);
  EMBER_CHECK_VALUE(mode == "exp_range", "mode is invalid and scale_fn is None");
  return std::pow(gamma, x);
}
CyclicValues cyclic_lr(int64_t epoch, const CyclicShape& shape, const std::function<double(int64_t)>& scale_fn,
                       const Values& base_lrs, const Values& max_lrs, const Values& base_momenta,
                       const Values& max_momenta) {
  check_group_count("values for max_lr", base_lrs.size(), max_lrs.size());
  check_group_count("values for max_momentum", base_momenta.size(), max_momenta.size());
  const double cycle = std::floor(1 + double(epoch) / shape.total_size);
  const double x = 1.0 + double(epoch) / shape.total_size - cycle;
  // Up from 0 to 1 over the rising part of the cycle, back down to 0 over the rest.
  const double factor = x <= shape.step_ratio ? x / shape.step_ratio : (x - 1) / (shape.step_ratio - 1);
  const int64_t arg = shape.scale_mode == "cycle" ? int64_t(cycle) : epoch;
  CyclicValues out;
  for (size_t i = 0; i < base_lrs.size(); ++i)
    out.lrs.push_back(base_lrs[i] + (max_lrs[i] - base_lrs[i]) * factor * scale_fn(arg));
  for (size_t i = 0; i < base_momenta.size(); ++i)
    out.momenta.push_back(max_momenta[i] - (max_momenta[i] - base_momenta[i]) * factor * scale_fn(arg));
  return out;
}

// ---------------------------------------------------------------- OneCycleLR

int64_t one_cycle_total_steps(std::optional<int64_t> total_steps, std::optional<int64_t> epochs,
                              std::optional<int64_t> steps_per_epoch) {
  if (total_steps) {
    EMBER_CHECK_VALUE(*total_steps > 0, "Expected positive integer total_steps, but got ", *total_steps);
    return *total_steps;
  }
  EMBER_CHECK_VALUE(epochs && steps_per_epoch, "You must define either total_steps OR (epochs AND steps_per_epoch)");
  EMBER_CHECK_VALUE(*epochs > 0, "Expected positive integer epochs, but got ", *epochs);
  EMBER_CHECK_VALUE(*steps_per_epoch > 0, "Expected positive integer steps_per_epoch, but got ", *steps_per_epoch);
  return *epochs * *steps_per_epoch;
}
void check_one_cycle(double pct_start, const std::string& anneal_strategy) {
  EMBER_CHECK_VALUE(pct_start >= 0 && pct_start <= 1, "Expected float between 0 and 1 pct_start, but got ",
                    detail::py_num(pct_start));
  EMBER_CHECK_VALUE(anneal_strategy == "cos" || anneal_strategy == "linear",
                    "anneal_strategy must by one of 'cos' or 'linear', instead got ", anneal_strategy);
}
std::vector<OneCyclePhase> one_cycle_phases(int64_t total_steps, double pct_start, bool three_phase) {
  const double T = double(total_steps);
  if (three_phase)
    return {{pct_start * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
            {2 * pct_start * T - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
            {T - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  return {{pct_start * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
          {T - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
}
OneCycleLrs one_cycle_lrs(double max_lr, double div_factor, double final_div_factor) {
  const double initial = max_lr / div_factor;
  return {initial, initial / final_div_factor};
}
OneCyclePoint one_cycle_point(double step, int64_t total_steps, const Values& phase_end_steps) {
  EMBER_CHECK_VALUE(step <= double(total_steps), "Tried to step ", int64_t(step) + 1,
                    " times. The specified number of total steps is ", total_steps);
  EMBER_CHECK_VALUE(!phase_end_steps.empty(), "OneCycleLR: no phases");
  double start = 0;
  const size_t last = phase_end_steps.size() - 1;
  for (size_t i = 0;; ++i) {
    const double end = phase_end_steps[i];
    if (step <= end || i == last) return {i, (step - start) / (end - start)};
    start = end;
  }
}
double anneal(const std::string& strategy, double start, double end, double pct) {
  if (strategy == "linear") return (end - start) * pct + start;
  EMBER_CHECK_VALUE(strategy == "cos", "anneal_strategy must by one of 'cos' or 'linear', instead got ", strategy);
  return cosine_between(start, end, pi * pct);
}

// ---------------------------------------------------------------- ReduceLROnPlateau

void check_plateau_factor(double factor) { EMBER_CHECK_VALUE(factor < 1.0, "Factor should be < 1.0."); }
void check_plateau_modes(const std::string& mode, const std::string& threshold_mode) {
  EMBER_CHECK_VALUE(mode == "min" || mode == "max", "mode ", mode, " is unknown!");
  EMBER_CHECK_VALUE(threshold_mode == "rel" || threshold_mode == "abs", "threshold mode ", threshold_mode,
                    " is unknown!");
}
double plateau_worst(const std::string& mode) {
  return mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}
bool plateau_is_better(double a, double best, const std::string& mode, const std::string& threshold_mode,
                       double threshold) {
  const bool rel = threshold_mode == "rel";
  if (mode == "min") return rel ? a < best * (1. - threshold) : a < best - threshold;
  return rel ? a > best * (threshold + 1.) : a > best + threshold;
}
PlateauStep plateau_step(double metric, const PlateauState& state, const std::string& mode,
                         const std::string& threshold_mode, double threshold, double patience, int64_t cooldown) {
  PlateauStep out{state, false};
  PlateauState& s = out.state;
  if (plateau_is_better(metric, s.best, mode, threshold_mode, threshold)) {
    s.best = metric;
    s.num_bad_epochs = 0;
  } else {
    s.num_bad_epochs += 1;
  }
  if (s.cooldown_counter > 0) {  // bad epochs during cooldown do not count
    s.cooldown_counter -= 1;
    s.num_bad_epochs = 0;
  }
  if (double(s.num_bad_epochs) > patience) {
    out.reduce = true;
    s.cooldown_counter = cooldown;
    s.num_bad_epochs = 0;
  }
  return out;
}
std::vector<std::optional<double>> plateau_reduce(const Values& lrs, double factor, const Values& min_lrs, double eps) {
  check_group_count("min_lrs", lrs.size(), min_lrs.size());
  std::vector<std::optional<double>> out;
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double new_lr = std::max(lrs[i] * factor, min_lrs[i]);
    out.push_back(lrs[i] - new_lr > eps ? std::optional<double>(new_lr) : std::nullopt);
  }
  return out;
}

// ---------------------------------------------------------------- SequentialLR

void check_sequential(size_t schedulers, size_t milestones) {
  EMBER_CHECK_VALUE(schedulers >= 1, "SequentialLR expects at least one scheduler, but got no scheduler.");
  EMBER_CHECK_VALUE(milestones == schedulers - 1,
                    "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                    "of milestone points, but got number of schedulers ",
                    schedulers, " and the number of milestones to be equal to ", milestones);
}
SequentialPick sequential_pick(const Values& milestones, double epoch) {
  const size_t idx = std::upper_bound(milestones.begin(), milestones.end(), epoch) - milestones.begin();
  return {idx, idx > 0 && milestones[idx - 1] == epoch};
}

}  // namespace ember::optim::lr_rules

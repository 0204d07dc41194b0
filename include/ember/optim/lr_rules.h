#pragma once
// The rules of torch.optim.lr_scheduler's schedulers: the one place each formula, each piece of
// stepping logic and each check of an argument's value lives. Two front ends call them: the C++
// schedulers over an Optimizer (lr_scheduler.h) and the Python ones (ember.optim.lr_scheduler,
// which keep torch's attributes, state_dict() and subclassing API and pass their attributes in
// here). What stays with each front end is its own object model: reading and writing param
// groups, "same optimizer" identity checks, Python's isinstance(int) checks, verbose printing.
//
// No Optimizer here: `lrs` are the param groups' current lrs and `base_lrs` their "initial_lr",
// one entry per group, and every rule returns the new values. The recursive ("chainable") forms
// give the lrs for `epoch` from the current ones, so edits made between steps and a second
// scheduler on the same optimizer carry through; the *_closed forms give them from base_lrs
// alone (torch's _get_closed_form_lr, used by step(epoch)). Arithmetic keeps torch's order of
// operations, so sequences match PyTorch's to the last bit.
//
// Epochs and the sizes compared with them are doubles: Python passes whatever number a user
// gave (torch's formulas accept floats), and every int64 epoch is exact as a double.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::optim::lr_rules {

using Values = std::vector<double>;
// lr_lambda of LambdaLR / MultiplicativeLR: epoch -> factor.
using EpochFn = std::function<double(int64_t)>;

// ---- argument checks shared by several schedulers
// `got` values given for `groups` param groups ("expected 2 values for max_lr, got 3").
void check_group_count(const std::string& what, size_t groups, size_t got);
// OneCycleLR and CyclicLR with cycle_momentum: `supported` = the optimizer has momentum (or betas).
void check_cycle_momentum(bool supported);

// ---- StepLR: lr *= gamma every step_size epochs
void check_step_size(double step_size);
Values step_lr(double epoch, const Values& lrs, double step_size, double gamma);
Values step_lr_closed(double epoch, const Values& base_lrs, double step_size, double gamma);

// ---- MultiStepLR: lr *= gamma at each milestone (any order; one listed twice multiplies twice)
Values multistep_lr(double epoch, const Values& lrs, const Values& milestones, double gamma);
Values multistep_lr_closed(double epoch, const Values& base_lrs, const Values& milestones, double gamma);

// ---- ConstantLR: lr = initial_lr * factor until total_iters, then initial_lr
void check_constant_factor(double factor);
Values constant_lr(double epoch, const Values& lrs, double factor, double total_iters);
Values constant_lr_closed(double epoch, const Values& base_lrs, double factor, double total_iters);

// ---- LinearLR: factor goes linearly from start_factor to end_factor over total_iters
void check_linear_factors(double start_factor, double end_factor);
Values linear_lr(double epoch, const Values& lrs, double start_factor, double end_factor, double total_iters);
Values linear_lr_closed(double epoch, const Values& base_lrs, double start_factor, double end_factor,
                        double total_iters);

// ---- ExponentialLR: lr *= gamma every epoch
Values exponential_lr(double epoch, const Values& lrs, double gamma);
Values exponential_lr_closed(double epoch, const Values& base_lrs, double gamma);

// ---- PolynomialLR: lr = initial_lr * (1 - epoch / total_iters) ** power, then constant
Values polynomial_lr(double epoch, const Values& lrs, double total_iters, double power);
Values polynomial_lr_closed(double epoch, const Values& base_lrs, double total_iters, double power);

// ---- cosine annealing: `end` + half a cosine from `start` at angle 0 to `end` at angle pi.
// CosineAnnealingLR, CosineAnnealingWarmRestarts and OneCycleLR's "cos" all anneal with it.
double cosine_between(double start, double end, double angle);

// ---- CosineAnnealingLR: cosine from initial_lr down to eta_min over T_max epochs, and back up
// after (torch's recursive form). first_step: the scheduler's first step (_step_count == 1), when
// a resumed scheduler (epoch > 0) has no previous lr to chain from.
void check_t_max(double T_max);
Values cosine_annealing_lr(double epoch, const Values& lrs, const Values& base_lrs, double T_max, double eta_min,
                           bool first_step);
Values cosine_annealing_lr_closed(double epoch, const Values& base_lrs, double T_max, double eta_min);

// ---- CosineAnnealingWarmRestarts (SGDR): cosine annealing restarted every T_i epochs,
// T_i = T_0 * T_mult ** restarts. T_cur is the (possibly fractional) position in the period.
struct WarmRestartsState {
  int64_t last_epoch;
  double T_cur;
  int64_t T_i;
};
void check_warm_restarts(int64_t T_0, int64_t T_mult);
// One step(epoch): the next epoch when epoch is empty, else a jump to a fractional epoch >= 0.
WarmRestartsState warm_restarts_step(std::optional<double> epoch, const WarmRestartsState& state, int64_t T_0,
                                     int64_t T_mult);
Values warm_restarts_lr(const Values& base_lrs, double T_cur, int64_t T_i, double eta_min);

// ---- LambdaLR: lr = initial_lr * lr_lambda(epoch); MultiplicativeLR: lr *= lr_lambda(epoch)
// after the first step. One function per group; a lambda may call back into Python.
void check_lambda_count(size_t groups, size_t lambdas);
Values lambda_lr(int64_t epoch, const Values& base_lrs, const std::vector<EpochFn>& lr_lambdas);
Values multiplicative_lr(int64_t epoch, const Values& lrs, const std::vector<EpochFn>& lr_lambdas);

// ---- CyclicLR: lr cycles between base_lr and max_lr (momentum between max and base momentum),
// the amplitude scaled by scale_fn of the cycle number or of the iteration.
struct CyclicShape {
  double total_size;   // iterations per cycle
  double step_ratio;   // the rising part's share of a cycle
  std::string scale_mode;  // "cycle" | "iterations": what scale_fn is given
};
// Checks the mode (when no scale_fn) and derives the cycle's shape; the built-in modes fix
// scale_mode, a user's scale_fn uses the one given.
CyclicShape cyclic_shape(double step_size_up, std::optional<double> step_size_down, const std::string& mode,
                         bool has_scale_fn, const std::string& scale_mode);
// The built-in modes' scale functions: triangular 1, triangular2 halves every cycle, exp_range
// gamma ** x.
double cyclic_scale(const std::string& mode, double gamma, double x);
struct CyclicValues {
  Values lrs;
  Values momenta;  // empty when base_momenta is
};
// scale_fn is called once per value, with the cycle number or the epoch (per scale_mode).
CyclicValues cyclic_lr(int64_t epoch, const CyclicShape& shape, const std::function<double(int64_t)>& scale_fn,
                       const Values& base_lrs, const Values& max_lrs, const Values& base_momenta,
                       const Values& max_momenta);

// ---- OneCycleLR: lr warms up from max_lr / div_factor to max_lr over pct_start of the steps,
// then anneals to initial_lr / final_div_factor (three_phase: back to initial_lr first);
// momentum goes the other way. The phases name the group options their ends come from.
struct OneCyclePhase {
  double end_step;
  std::string start_lr, end_lr, start_momentum, end_momentum;
};
// total_steps, or epochs * steps_per_epoch, checked as torch does.
int64_t one_cycle_total_steps(std::optional<int64_t> total_steps, std::optional<int64_t> epochs,
                              std::optional<int64_t> steps_per_epoch);
void check_one_cycle(double pct_start, const std::string& anneal_strategy);
std::vector<OneCyclePhase> one_cycle_phases(int64_t total_steps, double pct_start, bool three_phase);
// A group's initial_lr and min_lr from its max_lr.
struct OneCycleLrs {
  double initial_lr, min_lr;
};
OneCycleLrs one_cycle_lrs(double max_lr, double div_factor, double final_div_factor);
// Where `step` falls: the phase and the fraction of it done. Stepping past total_steps throws.
struct OneCyclePoint {
  size_t phase;
  double pct;
};
OneCyclePoint one_cycle_point(double step, int64_t total_steps, const Values& phase_end_steps);
// From start (pct 0) to end (pct 1): "cos" or "linear".
double anneal(const std::string& strategy, double start, double end, double pct);

// ---- ReduceLROnPlateau: lr *= factor (not below min_lr) when the metric has not improved for
// more than patience epochs, then cooldown epochs during which bad epochs do not count.
void check_plateau_factor(double factor);
void check_plateau_modes(const std::string& mode, const std::string& threshold_mode);
// The metric every other beats: +inf for "min", -inf for "max".
double plateau_worst(const std::string& mode);
bool plateau_is_better(double a, double best, const std::string& mode, const std::string& threshold_mode,
                       double threshold);
struct PlateauState {
  double best;
  int64_t num_bad_epochs;
  int64_t cooldown_counter;
};
struct PlateauStep {
  PlateauState state;
  bool reduce;  // reduce the lrs now (plateau_reduce)
};
PlateauStep plateau_step(double metric, const PlateauState& state, const std::string& mode,
                         const std::string& threshold_mode, double threshold, double patience, int64_t cooldown);
// The reduced lr of each group, or nothing where the change would not exceed eps.
std::vector<std::optional<double>> plateau_reduce(const Values& lrs, double factor, const Values& min_lrs, double eps);

// ---- SequentialLR: which scheduler runs at `epoch`, and whether it restarts there (step(0)).
struct SequentialPick {
  size_t index;
  bool restart;
};
void check_sequential(size_t schedulers, size_t milestones);
SequentialPick sequential_pick(const Values& milestones, double epoch);

}  // namespace ember::optim::lr_rules

#pragma once
// Learning-rate schedulers over an Optimizer (torch.optim.lr_scheduler). Each scheduler reads and
// writes the "lr" option of its optimizer's param groups; construction sets "initial_lr" (when
// last_epoch == -1) and performs the first step, exactly as torch does, so the sequences of
// get_last_lr() equal PyTorch's. step() uses torch's recursive forms (which see edits made to
// group lrs between steps); step(epoch) uses the closed form where torch has one. The formulas
// are lr_rules.h's, shared with the Python schedulers; these classes hold the state and move
// values between it, the rules and the param groups.
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   optim::CosineAnnealingLR sched(opt, /*T_max=*/100);
//   for (...) { opt.step(); sched.step(); }
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/lr_rules.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize/value.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // One scheduler step. With an epoch (deprecated in torch), jumps there using the closed form.
  virtual void step(std::optional<int64_t> epoch = std::nullopt);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // Every field but the optimizer, as torch's state_dict (a dict Value).
  virtual Value state_dict() const;
  virtual void load_state_dict(const Value& state);

 protected:
  // Sets initial_lr / base_lrs; derived constructors call initial_step() when fully built.
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  void initial_step();
  virtual std::vector<double> get_lr() = 0;
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  std::vector<double> group_lrs() const;
  void apply_lrs(const std::vector<double>& lrs);
  // Subclass fields for state_dict / load_state_dict.
  virtual void save_extra(Value& d) const {}
  virtual void load_extra(const Value& d) {}

  Optimizer* optimizer_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  friend class SequentialLR;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  int64_t step_size_;
  double gamma_;
};

class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  std::vector<int64_t> milestones_;  // sorted, repeats allowed (torch's Counter)
  double gamma_;
};

class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  double gamma_;
};

class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& opt, int64_t total_iters = 5, double power = 1.0, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  int64_t total_iters_;
  double power_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min = 0.0, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  int64_t T_max_;
  double eta_min_;
};

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& opt, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0,
                              int64_t last_epoch = -1);
  void step(std::optional<int64_t> epoch = std::nullopt) override;
  // Jumps to a fractional epoch (e.g. epoch + batch / batches_per_epoch), as torch's step(epoch).
  void step_at(double epoch);
 protected:
  std::vector<double> get_lr() override;
  void advance(std::optional<double> epoch);
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
};

class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5,
           int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& opt, double factor = 1.0 / 3, int64_t total_iters = 5, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  double factor_;
  int64_t total_iters_;
};

class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& opt, Lambda lr_lambda, int64_t last_epoch = -1);           // one for every group
  LambdaLR(Optimizer& opt, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);  // one per group
 protected:
  std::vector<double> get_lr() override;
  void save_extra(Value& d) const override;
  std::vector<Lambda> lambdas_;
};

// lr *= lr_lambda(epoch) at every step after the first.
class MultiplicativeLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  MultiplicativeLR(Optimizer& opt, Lambda lr_lambda, int64_t last_epoch = -1);
  MultiplicativeLR(Optimizer& opt, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  void save_extra(Value& d) const override;
  std::vector<Lambda> lambdas_;
};

// Runs schedulers one after another, switching at the milestones (e.g. LinearLR warm-up for
// `warmup` epochs, then CosineAnnealingLR: milestones = {warmup}).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step(std::optional<int64_t> epoch = std::nullopt) override;
  Value state_dict() const override;
  void load_state_dict(const Value& state) override;
 protected:
  std::vector<double> get_lr() override { return last_lr_; }
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Steps several schedulers of one optimizer together: their effects multiply.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step(std::optional<int64_t> epoch = std::nullopt) override;
  Value state_dict() const override;
  void load_state_dict(const Value& state) override;
 protected:
  std::vector<double> get_lr() override { return last_lr_; }
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

struct CyclicOptions {
  double step_size_up = 2000;
  std::optional<double> step_size_down;  // step_size_up when empty
  std::string mode = "triangular";  // "triangular" | "triangular2" | "exp_range"
  double gamma = 1.0;               // exp_range's
  std::function<double(int64_t)> scale_fn;  // replaces the mode's when set
  std::string scale_mode = "cycle";  // with scale_fn: "cycle" | "iterations"
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.8};  // one value for all groups, or one per group
  std::vector<double> max_momentum = {0.9};
};

// Cycles each group's lr between base_lr and max_lr (momentum the other way, between
// max_momentum and base_momentum); step() once per batch.
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& opt, std::vector<double> base_lrs, std::vector<double> max_lrs, CyclicOptions o = {},
           int64_t last_epoch = -1);
  CyclicLR(Optimizer& opt, double base_lr, double max_lr, CyclicOptions o = {}, int64_t last_epoch = -1);
 protected:
  std::vector<double> get_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  std::vector<double> max_lrs_;
  lr_rules::CyclicShape shape_;
  std::string mode_;
  double gamma_;
  std::function<double(int64_t)> scale_fn_;
  bool cycle_momentum_;
  std::vector<double> base_momenta_, max_momenta_;
};

struct OneCycleOptions {
  std::optional<int64_t> total_steps;
  std::optional<int64_t> epochs;
  std::optional<int64_t> steps_per_epoch;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // "cos" | "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleOptions o, int64_t last_epoch = -1);
  OneCycleLR(Optimizer& opt, double max_lr, OneCycleOptions o, int64_t last_epoch = -1);
  int64_t total_steps() const { return total_steps_; }
 protected:
  std::vector<double> get_lr() override;
  void save_extra(Value& d) const override;
  void load_extra(const Value& d) override;
  int64_t total_steps_;
  std::vector<lr_rules::OneCyclePhase> phases_;
  std::string anneal_strategy_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
};

struct PlateauOptions {
  std::string mode = "min";  // "min" | "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel" | "abs"
  int64_t cooldown = 0;
  std::vector<double> min_lrs = {0.0};  // one value for all groups, or one per group
  double eps = 1e-8;
};

// Reduces group lrs by `factor` when the metric passed to step() stops improving.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& opt, PlateauOptions o = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  int64_t num_bad_epochs() const { return state_.num_bad_epochs; }
  double best() const { return state_.best; }
  bool in_cooldown() const { return state_.cooldown_counter > 0; }
  Value state_dict() const;
  void load_state_dict(const Value& state);

 private:
  Optimizer* optimizer_;
  PlateauOptions o_;
  std::vector<double> min_lrs_;
  lr_rules::PlateauState state_;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ember::optim

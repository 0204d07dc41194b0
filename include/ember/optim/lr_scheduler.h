#pragma once
// Learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 1.13 semantics). Each scheduler
// reads and writes the "lr" option of its optimizer's param groups; construction sets
// "initial_lr" (when last_epoch == -1) and performs the first step, exactly as torch does, so the
// sequences of get_last_lr() equal PyTorch's. step() uses torch's recursive forms (which see
// edits made to group lrs between steps); step(epoch) uses the closed form where torch has one.
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
 protected:
  std::vector<double> get_lr() override;
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
  struct Phase { double end_step; const char *start_lr, *end_lr, *start_mom, *end_mom; };
  double anneal(double start, double end, double pct) const;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  bool linear_;
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
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  double best() const { return best_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  Value state_dict() const;
  void load_state_dict(const Value& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer* optimizer_;
  PlateauOptions o_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ember::optim

#pragma once
// Loss modules: criterion(input, target) over nn::functional's losses.
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

class Loss : public Module {
 public:
  explicit Loss(std::string reduction = "mean") : reduction(std::move(reduction)) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::forward;
  std::string reduction;
};

class CrossEntropyLoss : public Loss {
 public:
  struct Options {
    std::optional<Tensor> weight = std::nullopt;
    int64_t ignore_index = -100;
    std::string reduction = "mean";
    double label_smoothing = 0.0;
  };
  CrossEntropyLoss() : CrossEntropyLoss(Options{}) {}
  explicit CrossEntropyLoss(Options o)
      : Loss(o.reduction), ignore_index(o.ignore_index), label_smoothing(o.label_smoothing) {
    if (o.weight) register_buffer("weight", *o.weight);
    weight = o.weight;
  }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
  }
  std::string name() const override { return "CrossEntropyLoss"; }
  std::optional<Tensor> weight;
  int64_t ignore_index;
  double label_smoothing;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(std::optional<Tensor> weight = std::nullopt, int64_t ignore_index = -100, std::string reduction = "mean")
      : Loss(std::move(reduction)), weight(std::move(weight)), ignore_index(ignore_index) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::nll_loss(input, target, weight, ignore_index, reduction);
  }
  std::string name() const override { return "NLLLoss"; }
  std::optional<Tensor> weight;
  int64_t ignore_index;
};

#define EMBER_SIMPLE_LOSS(Cls, fn)                                                                \
  class Cls : public Loss {                                                                       \
   public:                                                                                        \
    explicit Cls(std::string reduction = "mean") : Loss(std::move(reduction)) {}                  \
    Tensor forward(const Tensor& input, const Tensor& target) override {                         \
      return functional::fn(input, target, reduction);                                           \
    }                                                                                             \
    std::string name() const override { return #Cls; }                                            \
  };
EMBER_SIMPLE_LOSS(MSELoss, mse_loss)
EMBER_SIMPLE_LOSS(L1Loss, l1_loss)
#undef EMBER_SIMPLE_LOSS

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0) : Loss(std::move(reduction)), beta(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::smooth_l1_loss(input, target, reduction, beta);
  }
  std::string name() const override { return "SmoothL1Loss"; }
  double beta;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0) : Loss(std::move(reduction)), delta(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::huber_loss(input, target, reduction, delta);
  }
  std::string name() const override { return "HuberLoss"; }
  double delta;
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(std::optional<Tensor> weight = std::nullopt, std::string reduction = "mean")
      : Loss(std::move(reduction)), weight(std::move(weight)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy(input, target, weight, reduction);
  }
  std::string name() const override { return "BCELoss"; }
  std::optional<Tensor> weight;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(std::optional<Tensor> weight = std::nullopt, std::string reduction = "mean",
                             std::optional<Tensor> pos_weight = std::nullopt)
      : Loss(std::move(reduction)), weight(std::move(weight)), pos_weight(std::move(pos_weight)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
  }
  std::string name() const override { return "BCEWithLogitsLoss"; }
  std::optional<Tensor> weight, pos_weight;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false)
      : Loss(std::move(reduction)), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::kl_div(input, target, reduction, log_target);
  }
  std::string name() const override { return "KLDivLoss"; }
  bool log_target;
};

}  // namespace ember::nn

#pragma once
// Adam and AdamW (torch.optim.Adam / AdamW, 1.13 update rules and defaults).
//   optim::AdamW adamw(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
// State per parameter: "step" (0-dim float32 tensor), "exp_avg", "exp_avg_sq", and
// "max_exp_avg_sq" with amsgrad.
#include <utility>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  explicit Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
  void step() override;
};

// Adam with decoupled weight decay: param *= 1 - lr * weight_decay before the Adam update.
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
  void step() override;
};

}  // namespace ember::optim

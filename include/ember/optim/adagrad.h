#pragma once
// Adagrad (torch.optim.Adagrad, 1.13). State, created at construction as torch does: "step"
// (0-dim float32 tensor) and "sum" (filled with initial_accumulator_value).
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions options = {});
  void step() override;

 protected:
  void on_group_added(ParamGroup& group) override;
};

}  // namespace ember::optim

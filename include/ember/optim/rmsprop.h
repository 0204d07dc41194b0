#pragma once
// RMSprop (torch.optim.RMSprop, 1.13). State per parameter: "step" (an int, as torch 1.13
// stores it), "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered).
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options = {});
  void step() override;
};

}  // namespace ember::optim
